"""`hyporag demo`: the main job on the embedded defaults, sized to finish in about five minutes."""

from __future__ import annotations

import argparse

from hyporag.cli.common import add_data_args
from hyporag.eval.run_report import cell, markdown
from hyporag.eval.summary import MethodSummary
from hyporag.jobs.evaluate import evaluate
from hyporag.jobs.run_config import RunConfig

DEMO_QUESTIONS, DEMO_METHODS = 16, "cot,rag,chr"  # ~20 s a question with the lean adapter (docs/results/speed.md)


def add_parser(sub) -> None:
    demo = sub.add_parser("demo", help="the main job on embedded defaults, sized to finish in ~5 minutes")
    add_data_args(demo)
    demo.add_argument("--lm")
    demo.add_argument("--out", default="runs/demo")


def run(args: argparse.Namespace, config: RunConfig) -> int:
    """The main job: a side-by-side run sized for ~5 minutes of a 2-core CPU with the embedded 1.5B, led by what a
    newcomer should see: accuracy beside how often the correct option's text reached the context."""

    questions, budget, methods = DEMO_QUESTIONS, 3, DEMO_METHODS
    print(f"demo: {questions} mmlu-med-dev questions, methods {methods}, context budget B={budget} passages, "
          "fast protocol (no reasoning step: on 2 CPU cores the 1.5B model reads ~75 prompt tokens/s; the paper "
          "uses B=15 and reasoning, `--protocol paper`); re-runs are served from cache")
    demo = config.replace(dataset="mmlu-med-dev", methods=methods, limit=questions, out=args.out,
                          program_settings={**config.program_settings, "budget": budget})
    done = evaluate(demo)
    result, out = done.report, done.out
    print(markdown(result))
    print("| method | accuracy | 95% CI | p(gold) | lift over cot | lift > 0 | correct option's text in context | "
          "s/q |\n|---|---:|---|---:|---:|---:|---:|---:|")
    for s in map(MethodSummary.of, result["methods"]):
        print(f"| {s.method} | {s.accuracy:.3f} | {s.ci95_low:.2f}–{s.ci95_high:.2f} | {cell(s.p_gold, '{:.2f}')} | "
              f"{cell(s.lift_over_cot, '{:+.2f}')} | {cell(s.lift_positive, '{:.2f}')} | "
              f"{cell(s.gold_in_context, '{:.2f}')} | {s.seconds_per_q:.1f} |")
    print("Retrieval helps only when the passages separate the options: the context column says how often the "
          "correct option's text was in them, and lift over cot how far they moved the reader's own belief in it "
          f"(log p of the correct option, against no retrieval). Rows: {out}/results.jsonl; tables: summary.md")
    return 0
