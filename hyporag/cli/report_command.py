"""`hyporag report RUN_DIR`: redraw a run's tables and plots from its rows (no LM; works mid-run)."""

from __future__ import annotations

import argparse
from pathlib import Path

from hyporag.eval.run_report import markdown, report_from_dir
from hyporag.eval.viewer import write_view
from hyporag.jobs.run_config import RunConfig


def add_parser(sub) -> None:
    report = sub.add_parser("report", help="redraw a results directory's tables and plots (no LM; works mid-run)")
    report.add_argument("run_dir", help="the --out directory of `hyporag eval`, or a packed run (docs/results/rows/)")
    report.add_argument("--out", help="where the summary files and the page go (default: the run directory; a packed "
                                      "run needs one)")


def run(args: argparse.Namespace, config: RunConfig) -> int:
    target = Path(args.out or args.run_dir)
    result = report_from_dir(args.run_dir, args.out)
    print(markdown(result))
    view = write_view([args.run_dir], target / "report.html" if args.out else None)
    print(f"written: {target}/summary.json, summary.md, summary.csv"
          + "".join(f", {Path(p).name}" for p in result.get("plots", [])) + f", {view.name}")
    return 0


DEMO_QUESTIONS, DEMO_METHODS = 16, "cot,rag,chr"  # ~20 s a question with the lean adapter (docs/results/speed.md)
