"""`hyporag tune`: λ / schedule / k / merge / retriever by a resumable Optuna study, the best frozen."""

from __future__ import annotations

import argparse
import sys

from hyporag.cli.common import add_settings, add_split_args, load_settings
from hyporag.jobs.settings import TuneSettings
from hyporag.jobs.tune import study_summary, tune


def add_parser(sub) -> None:
    opt = sub.add_parser("tune", help="tune λ / schedule / k / merge / retriever with a resumable Optuna study")
    add_split_args(opt, TuneSettings)
    add_settings(opt, TuneSettings, only=("study", "trials", "storage", "modes", "objective", "heartbeat"))
    opt.add_argument("--report", action="store_true", help="print the best trials and write history/importance PNGs")


def run(args: argparse.Namespace) -> int:
    config, settings = load_settings(args, TuneSettings)
    if args.report:
        for row in study_summary(settings, config):
            print(f"trial {row['trial']:>3}  {row['value']:.3f}  {row['params']}")
        print(f"plots: runs/studies/{settings.study}-history.png, runs/studies/{settings.study}-importance.png")
        return 0
    result = tune(settings, config)
    if result.failed:
        print(f"{result.failed} trial(s) failed with every question erroring (their first error is shown above)",
              file=sys.stderr)
    accuracy = next((h["accuracy"] for h in result.history if h["number"] == result.best_trial), None)
    value = f"{settings.metric} {result.best_value:.3f}"
    if settings.objective == "accuracy" and settings.metric == "accuracy" and accuracy is not None:
        value = (f"accuracy {accuracy:.3f} (the study's value {result.best_value:.4f} adds up to 0.001 for the "
                 "reader's belief in the gold option, to break ties between trials)")
    elif settings.objective != "accuracy":  # the value is on the objective's own 0–1 scale, not an accuracy
        value = f"{settings.objective} {result.best_value:.3f} (scaled 0–1" + (
            f"; accuracy {accuracy:.3f})" if accuracy is not None else ")")
    print(f"best trial {result.best_trial}: {value} with {result.best_params}; "
          f"this run {result.seconds:.0f} s, {result.lm_calls} LM calls (replies served from the cache not counted)")
    if result.artifact:
        print(f"frozen best trial to {result.artifact}")
    return 0
