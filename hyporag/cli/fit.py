"""`hyporag fit --dataset my_dev.csv --corpus my_corpus.jsonl --method chr --out artifacts/my-chr`."""

from __future__ import annotations

import argparse

from hyporag.cli.common import add_model_and_program_args, add_optimizer_args, add_run_args, load_settings
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.fit import fit
from hyporag.jobs.settings import FitSettings

STOPPED = 7  # `--max-minutes` reached at a stage boundary: a clean, resumable stop (docs/failure-modes.md)


def add_parser(sub) -> None:
    opt = sub.add_parser("fit", help="index, split, tune, compile, freeze and evaluate a program for a new domain")
    add_model_and_program_args(opt)
    add_run_args(opt, "dev set to split (default medqa-dev); never a test split")
    opt.add_argument("--method", help="one method to fit (implied by --program)")
    opt.add_argument("--methods", help="candidate methods, comma-separated: each tuned on the same split, one chosen "
                     "on validation by a stated rule and confirmed on held-out (default without --method: "
                     "rag,hcqr,chr,option-contrast; cot is always measured as the no-retrieval reference)")
    opt.add_argument("--max-minutes", type=float, help="stop cleanly at the next stage boundary after this long "
                     "(re-run the same command to resume)")
    opt.add_argument("--max-calls-per-question", type=float, help="a candidate costing more LM calls per question "
                     "on validation is not chosen")
    opt.add_argument("--metric", choices=("accuracy", "dur", "combined"), help="default accuracy")
    opt.add_argument("--allow-test", action="store_const", const=True, help="permit fitting on a test split (don't)")
    opt.add_argument("--program", help="start from a frozen artifact directory")
    opt.add_argument("--out", help="the fit directory to write (its artifact is <out>/artifact)")
    add_optimizer_args(opt, "prompts")
    add_optimizer_args(opt, "study")
    opt.add_argument("--splits", help="train,validation,held-out fractions (seeded; default 0.5,0.25,0.25)")
    opt.add_argument("--skip-prompts", action="store_true", help="tune the numbers only (no teleprompter stage)")


def _splits(text: str | None) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        return tuple(float(x) for x in text.split(","))
    except ValueError:
        raise HyporagError(f"--splits {text!r}: give three fractions, e.g. 0.5,0.25,0.25") from None


def run(args: argparse.Namespace) -> int:
    splits = _splits(args.splits)
    args.splits = None  # parsed above: the typed value goes in below
    methods = tuple(m.strip() for m in args.methods.split(",") if m.strip()) if args.methods else None
    args.methods = None
    config, settings = load_settings(args, FitSettings, {"splits": splits, "methods": methods})
    if args.skip_prompts:
        settings = settings.replace(optimizer=None)
    result = fit(settings, config)
    if result.stopped:  # its one line is printed; finished stages are kept for the resume
        return STOPPED
    print((result.out / "report.md").read_text(encoding="utf-8"))
    return 0
