"""`hyporag eval`: methods side by side on a dataset, with a CI gate (`--fail-under`, `--junit`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hyporag.cli.common import add_data_args, add_lm_args, add_program_args, add_run_args, load_settings
from hyporag.eval.ci_gate import parse_bars
from hyporag.eval.report import markdown
from hyporag.jobs.evaluate import evaluate
from hyporag.jobs.settings import EvalSettings


def add_parser(sub) -> None:
    ev = sub.add_parser("eval", help="evaluate methods side by side")
    add_data_args(ev)
    add_lm_args(ev)
    add_program_args(ev)
    add_run_args(ev, "benchmark name or a .jsonl/.csv path (required here or in the project file)")
    ev.add_argument("--methods", help="comma-separated methods (default cot,rag)")
    ev.add_argument("--out", help="results directory (default runs/<dataset>)")
    ev.add_argument("--program", help="evaluate a frozen artifact directory (its method; --methods is ignored)")
    ev.add_argument("--dur", action="store_const", const=True,
                    help="judge each context (Entailed/Useful/NotUseful) with --judge-lm")
    ev.add_argument("--baseline", help="the method every other is tested against in the reports (default rag); "
                    "lift is always over cot, the same reader without retrieval")
    ev.add_argument("--fail-under", action="append", metavar="METHOD=ACC",
                    help="exit 1 when METHOD's accuracy is below ACC (repeatable): a CI gate")
    ev.add_argument("--junit", metavar="PATH", help="write a JUnit XML file, one test case per method")
    ev.add_argument("--shard", metavar="I/N", help="run every N-th question from the I-th, every method (one "
                    "machine's part of a run; give each shard its own --out and join them with hyporag merge)")


def run(args: argparse.Namespace) -> int:
    bars = parse_bars(args.fail_under) if args.fail_under else None
    config, settings = load_settings(args, EvalSettings, {"fail_under": bars})
    result = evaluate(config, settings)
    print(markdown(result.report))
    print(f"results: {result.out}/results.jsonl, summary.json, summary.md, summary.csv"
          + "".join(f", {Path(p).name}" for p in result.report.get("plots", [])))
    for spec, entry in result.endpoints.items():
        print(f"{spec} ({', '.join(entry['roles'])}): " + "; ".join(
            f"{base} {u['calls']} calls, {u['failures']} failed" for base, u in entry["endpoints"].items()))
    for failure in result.failures:
        print(f"hyporag: below bar: {failure}", file=sys.stderr)
    return 1 if result.failures else 0
