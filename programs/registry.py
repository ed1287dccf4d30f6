"""Method names as the CLI and the evaluation harness spell them, ablations included."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from hyporag.programs.base import MCQProgram
from hyporag.programs.baselines import CoT, HyDE, Query2DocRAG, RerankRAG, Rewriting, SimpleRAG
from hyporag.programs.chr import CHR
from hyporag.programs.hcqr import HCQR
from hyporag.retrieval.lambda_schedule import LambdaSchedule

METHODS: dict[str, Callable[..., MCQProgram]] = {
    "cot": CoT,
    "rag": SimpleRAG,
    "rerank": RerankRAG,
    "rewrite": Rewriting,
    "rewrite+options": partial(Rewriting, retrieval_sees_options=True),
    "hyde": HyDE,
    "q2d": Query2DocRAG,
    "hcqr": HCQR,
    "hcqr-no-support": partial(HCQR, queries=("distinction", "key_features")),
    "hcqr-no-distinction": partial(HCQR, queries=("support", "key_features")),
    "hcqr-no-key-features": partial(HCQR, queries=("support", "distinction")),
    "hcqr-no-options": partial(HCQR, retrieval_sees_options=False),
    "hcqr-show-hypothesis": partial(HCQR, show_hypothesis=True),
    "chr": CHR,
    "chr-linear": partial(CHR, schedule=LambdaSchedule("linear")),
    "chr-threshold": partial(CHR, schedule=LambdaSchedule("threshold")),
    "chr-sigmoid": partial(CHR, schedule=LambdaSchedule("sigmoid")),
}
PAPER_METHODS = ("cot", "rag", "rerank", "rewrite", "hyde", "q2d", "hcqr", "chr")


def make_program(method: str, **kwargs) -> MCQProgram:
    if method not in METHODS:
        from hyporag.errors import HyporagError

        raise HyporagError(f"unknown method {method!r}: use one of {', '.join(METHODS)}")
    program = METHODS[method](**kwargs)
    program.method = method
    return program
