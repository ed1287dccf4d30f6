"""`hyporag report RUN_DIR`: redraw a run's tables and plots from its rows (no LM; works mid-run)."""

from __future__ import annotations

import argparse
from pathlib import Path

from hyporag.eval.run_report import markdown, report_from_dir
from hyporag.eval.viewer import write_view
from hyporag.jobs.run_config import RunConfig


def add_parser(sub) -> None:
    report = sub.add_parser("report", help="redraw a results directory's tables and plots (no LM; works mid-run)")
    report.add_argument("run_dir", help="the --out directory of `hyporag eval`")


def run(args: argparse.Namespace, config: RunConfig) -> int:
    result = report_from_dir(args.run_dir)
    print(markdown(result))
    view = write_view([args.run_dir])
    print(f"written: {args.run_dir}/summary.json, summary.md, summary.csv"
          + "".join(f", {Path(p).name}" for p in result.get("plots", [])) + f", {view.name}")
    return 0


DEMO_QUESTIONS, DEMO_METHODS = 16, "cot,rag,chr"  # ~20 s a question with the lean adapter (docs/results/speed.md)
