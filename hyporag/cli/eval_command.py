"""`hyporag eval`: methods side by side on a dataset, with a CI gate (`--fail-under`, `--junit`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hyporag.cli.common import add_data_args, add_lm_args, add_program_args, add_run_args, add_settings, load_settings
from hyporag.eval.regression import markdown_lines as comparison_lines
from hyporag.eval.run_report import markdown
from hyporag.jobs.evaluate import evaluate
from hyporag.jobs.run_groups import RunControl
from hyporag.jobs.settings import EvalSettings


def add_parser(sub) -> None:
    ev = sub.add_parser("eval", help="evaluate methods side by side")
    add_data_args(ev)
    add_lm_args(ev)
    add_program_args(ev)
    add_run_args(ev, "benchmark name or a .jsonl/.csv path (required here or in the project file)")
    ev.add_argument("--methods", help="comma-separated methods (default cot,rag)")
    add_settings(ev, RunControl, only=("out", "program", "dur", "baseline"),
                 helps={"out": "results directory (default runs/<dataset>)",
                        "program": "evaluate a frozen artifact directory (its method; --methods is ignored)"})
    add_settings(ev, EvalSettings)


def run(args: argparse.Namespace) -> int:
    config, settings = load_settings(args, EvalSettings)
    result = evaluate(config, settings)
    print(markdown(result.report))
    stop = (result.report.get("settings") or {}).get("sequential") or {}
    if stop.get("stopped_at") is not None:
        print(f"until decided: stopped after {stop['stopped_at']} question(s): {stop['reason']}")
    if result.comparison is not None:
        print("\n".join(["", *comparison_lines(result.comparison)]))
    print(f"results: {result.out}/results.jsonl, summary.json, summary.md, summary.csv"
          + "".join(f", {Path(p).name}" for p in result.report.get("plots", [])))
    for spec, entry in result.endpoints.items():
        print(f"{spec} ({', '.join(entry['roles'])}): " + "; ".join(
            f"{base} {u['calls']} calls, {u['failures']} failed" for base, u in entry["endpoints"].items()))
    for failure in result.failures:
        print(f"hyporag: {'worse than --against' if ' worse than the old run' in failure else 'below bar'}: "
              f"{failure}", file=sys.stderr)
    return 1 if result.failures else 0
