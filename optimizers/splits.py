"""Train/validation splits for tuning: seeded, disjoint, and never a test split unless asked explicitly."""

from __future__ import annotations

import hashlib
import random

import dspy

from hyporag.foundation.errors import HyporagError
from hyporag.questions.datasets import is_test_split
from hyporag.questions.records import question_fingerprint


def refuse_test_split(name: str, allow_test: bool) -> None:
    if is_test_split(name) and not allow_test:
        raise HyporagError(f"{name!r} is a test split (for reporting only); tune on a dev split such as medqa-dev "
                           "or mmlu-med-val, or pass --allow-test if you really mean it")


def split_train_val(examples: list[dspy.Example], val_fraction: float, seed: int) -> tuple[list, list]:
    """A seeded shuffle cut into disjoint train and validation lists."""
    if not 0.0 < val_fraction < 1.0:
        raise HyporagError(f"--val-fraction must be in (0, 1), got {val_fraction}")
    order = list(examples)
    random.Random(seed).shuffle(order)
    cut = max(1, round(len(order) * val_fraction))
    if cut >= len(order):
        raise HyporagError(f"{len(order)} examples are too few to split with --val-fraction {val_fraction}")
    return order[cut:], order[:cut]


def questions_fingerprint(examples: list) -> str:
    """The contents of a question set, in order: what a fit's every stage, or a study's every trial, was computed
    from."""
    joined = "\n".join(f"{e.id}:{question_fingerprint(e)}" for e in examples)
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()[:16]


def three_way_split(examples: list, fractions: tuple[float, float, float], seed: int) -> dict[str, list]:
    """A seeded shuffle cut into disjoint train / validation / held-out lists (each at least one question)."""
    if len(fractions) != 3 or any(f <= 0 for f in fractions) or abs(sum(fractions) - 1.0) > 1e-6:
        raise HyporagError(f"--splits {fractions}: give three positive fractions that add up to 1")
    if len(examples) < 3:
        raise HyporagError(f"{len(examples)} questions are too few to split three ways")
    order = list(examples)
    random.Random(seed).shuffle(order)
    n_val = max(1, round(len(order) * fractions[1]))
    n_held = max(1, round(len(order) * fractions[2]))
    n_train = len(order) - n_val - n_held
    if n_train < 1:
        raise HyporagError(f"{len(order)} questions leave no training question with --splits {fractions}")
    return {"train": order[:n_train], "val": order[n_train:n_train + n_val], "heldout": order[n_train + n_val:]}
