"""`hyporag fit --dataset my_dev.csv --corpus my_corpus.jsonl --method chr --out artifacts/my-chr`."""

from __future__ import annotations

import argparse

from hyporag.cli.common import add_model_and_program_args, add_run_args, add_settings, load_settings
from hyporag.jobs.fit import fit
from hyporag.jobs.run_groups import RunControl
from hyporag.jobs.settings import FitSettings

STOPPED = 7  # `--max-minutes` reached at a stage boundary: a clean, resumable stop (docs/failure-modes.md)


def add_parser(sub) -> None:
    opt = sub.add_parser("fit", help="index, split, tune, compile, freeze and evaluate a program for a new domain")
    add_model_and_program_args(opt)
    add_run_args(opt, "dev set to split (default medqa-dev); never a test split")
    add_settings(opt, FitSettings)
    add_settings(opt, RunControl, only=("program",), helps={"program": "start from a frozen artifact directory"})
    opt.add_argument("--skip-prompts", action="store_true", help="tune the numbers only (no teleprompter stage)")


def run(args: argparse.Namespace) -> int:
    config, settings = load_settings(args, FitSettings)
    if args.skip_prompts:
        settings = settings.replace(optimizer=None)
    result = fit(settings, config)
    if result.stopped:  # its one line is printed; finished stages are kept for the resume
        return STOPPED
    print((result.out / "report.md").read_text(encoding="utf-8"))
    return 0
