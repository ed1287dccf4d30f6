"""The betting test of "no difference" (Waudby-Smith and Ramdas 2024, aGRAPA bets): its wealth equals confseq's own
computation on seeded streams, it stays below 1/alpha on A/A streams in all but alpha of them however often it is
read (skewed nulls included), and it decides a planted difference in the direction it lies."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from hyporag.eval.betting_test import BettingTest

REFERENCE = Path(__file__).parent / "fixtures" / "betting_cs_reference.json"


@pytest.mark.parametrize("case", ["test-uniform", "test-accuracy", "test-skewed"])
def test_its_wealth_is_confseqs(case):
    reference = json.loads(REFERENCE.read_text())["cases"][case]
    test = BettingTest(span=1.0, alpha=0.05)
    wealth = []
    for x in reference["x"]:
        test.update(2 * x - 1)  # x in [0, 1] is the difference 2x - 1 in [-1, 1]
        wealth.append(test.log_wealth)
    assert np.allclose(wealth, reference["log_capital"], atol=1e-6)


def null_streams(kind: str, rng: np.random.Generator, n: int) -> np.ndarray:
    """Mean-zero paired differences in [-1, 1]: symmetric, and skewed (rare large losses, many small gains)."""
    if kind == "three-point":
        return rng.choice([-1.0, 0.0, 1.0], n, p=[0.07, 0.86, 0.07])
    if kind == "skewed":
        return np.where(rng.random(n) < 0.1, -0.9, 0.1)
    return np.clip(rng.normal(0, 0.3, n), -1, 1) - 0.0


@pytest.mark.parametrize("kind", ["three-point", "skewed", "normal"])
def test_read_after_every_question_it_decides_falsely_at_most_alpha_of_the_time(kind):
    rng = np.random.default_rng(11)
    false = 0
    for _ in range(400):
        test = BettingTest(span=1.0, alpha=0.05)
        for d in null_streams(kind, rng, 300):
            if test.update(float(d)) != "undecided":
                false += 1
                break
    assert false / 400 <= 0.05, false


def test_a_planted_difference_is_decided_in_its_direction_and_alpha_sets_the_bar():
    rng = np.random.default_rng(3)
    worse = BettingTest(span=1.0, alpha=0.05)
    for d in np.clip(rng.normal(-0.15, 0.3, 400), -1, 1):
        worse.update(float(d))
    assert worse.outcome == "worse" and worse.decided_at < 150
    assert worse.log_wealth > math.log(20)
    strict = BettingTest(span=1.0, alpha=0.001)
    for d in np.clip(np.random.default_rng(3).normal(-0.15, 0.3, 400), -1, 1):
        strict.update(float(d))
    assert strict.decided_at > worse.decided_at
    with pytest.raises(ValueError, match="outside"):
        BettingTest(span=1.0).update(1.5)
