"""`hyporag compile`: a program's prompts tuned by a DSPy teleprompter, frozen into an artifact."""

from __future__ import annotations

import argparse

from hyporag.cli.common import add_optimizer_args, add_split_args, load_settings
from hyporag.jobs.compile import compile as compile_job
from hyporag.jobs.settings import PROMPTS, CompileSettings


def add_parser(sub) -> None:
    opt = sub.add_parser("compile", help="tune a program's prompts with a DSPy teleprompter and freeze it")
    add_split_args(opt, CompileSettings)
    add_optimizer_args(opt, PROMPTS)


def run(args: argparse.Namespace) -> int:
    config, settings = load_settings(args, CompileSettings)
    result = compile_job(settings, config)
    optimizer = result.cost_by_phase.get("optimizer", {})
    print(f"validation {settings.metric}: {result.before:.3f} -> {result.after:.3f}; optimizer "
          f"{optimizer.get('seconds', 0):.0f} s, {result.lm_calls} LM calls; total {result.seconds:.0f} s; "
          f"frozen to {result.artifact}")
    return 0
