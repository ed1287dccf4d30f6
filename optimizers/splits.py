"""Train/validation splits for tuning: seeded, disjoint, and never a test split unless asked explicitly."""

from __future__ import annotations

import random

import dspy

from hyporag.foundation.errors import HyporagError
from hyporag.questions.datasets import is_test_split


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
