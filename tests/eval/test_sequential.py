"""The anytime-valid confidence sequence: the bounds confseq computes for the paper's hedged capital sequence, its
coverage under monitoring after every observation on seeded bounded streams, and the three outcomes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hyporag.eval.sequential import BettingCS, outcome_of

REFERENCE = Path(__file__).parent / "fixtures" / "betting_cs_reference.json"


@pytest.mark.parametrize("case", ["uniform", "accuracy", "skewed", "wor-uniform", "wor-accuracy", "wor-skewed"])
def test_the_bounds_are_confseqs_for_the_papers_sequence(case):
    """With replacement and, `wor-`, the whole of a finite population read without replacement (at its last
    observation the sequence is the population's mean itself)."""
    reference = json.loads(REFERENCE.read_text())["cases"][case]
    sequence = BettingCS(0.0, 1.0, alpha=0.05, population=reference["population"])
    bounds = np.array([sequence.update(x) for x in reference["x"]])
    assert np.allclose(bounds[:, 0], reference["lower"], atol=1e-6)
    assert np.allclose(bounds[:, 1], reference["upper"], atol=1e-6)
    if reference["population"]:
        assert bounds[-1, 0] == pytest.approx(np.mean(reference["x"])) == bounds[-1, 1]
        with pytest.raises(ValueError, match="no more"):
            sequence.update(0.5)


def test_a_sequence_in_other_units_is_the_same_sequence_rescaled():
    x = np.random.default_rng(5).choice([0.0, 0.5, 1.0], 80, p=[0.2, 0.5, 0.3])
    unit, paired = BettingCS(0, 1, 0.05), BettingCS(-1, 1, 0.05)
    for value in x:
        low, high = unit.update(value)
        lower, upper = paired.update(2 * value - 1)
    assert lower == pytest.approx(2 * low - 1) and upper == pytest.approx(2 * high - 1)


@pytest.mark.parametrize("probabilities", [(0.15, 0.6, 0.25), (0.4, 0.2, 0.4), (0.05, 0.9, 0.05)])
def test_monitored_after_every_question_it_misses_the_true_mean_at_most_alpha_of_the_time(probabilities):
    """200 seeded streams of 150 paired accuracy differences in {-1, 0, 1}: the sequence, read after every one,
    ever excludes the true mean in at most 5% of streams."""
    rng = np.random.default_rng(17)
    truth = probabilities[2] - probabilities[0]
    misses = 0
    for _ in range(200):
        sequence = BettingCS(-1, 1, alpha=0.05)
        for d in rng.choice([-1.0, 0.0, 1.0], 150, p=probabilities):
            lower, upper = sequence.update(d)
            if not lower <= truth <= upper:
                misses += 1
                break
    assert misses / 200 <= 0.05


def test_outcomes_are_better_worse_equivalent_or_undecided():
    from hyporag.eval.comparisons import decide_stream
    from hyporag.eval.measures import measure_named

    accuracy = measure_named("accuracy")

    def read(values, delta=0.05):
        return decide_stream(values, list(range(1, len(values) + 1)), accuracy, 0.05, delta)

    assert outcome_of(0.01, 0.3, 0.05) == "better" and outcome_of(-0.3, -0.01, 0.05) == "worse"
    assert outcome_of(-0.04, 0.03, 0.05) == "equivalent" and outcome_of(-0.2, 0.1, 0.05) == "undecided"
    clear = read([1.0] * 30 + [0.0] * 30)
    assert clear.outcome == "better" and 5 < clear.decided_at < 30 and clear.history[0]["outcome"] == "better"
    ties = read([0.0] * 400)
    assert ties.outcome == "equivalent" and ties.decided_at < 400 and ties.lower > -0.05 and ties.upper < 0.05
    few = read([1.0, -1.0, 0.0, 1.0])
    assert few.outcome == "undecided" and few.decided_at is None and few.paired == 4


def test_an_early_equivalent_is_refined_by_a_later_better_and_both_are_said():
    """Ties for a long while, then a small real difference: equivalent (inside +-delta) first, better later; the
    history keeps both, since the sequence and the test each hold at every question."""
    from hyporag.eval.comparisons import decide_stream
    from hyporag.eval.measures import measure_named

    values = [0.0] * 300 + [1.0, 0.0, 0.0, 0.0] * 150
    decision = decide_stream(values, list(range(1, len(values) + 1)), measure_named("accuracy"), 0.05, 0.2)
    assert [h["outcome"] for h in decision.history] == ["equivalent", "better"]
    assert decision.outcome == "better" and decision.decided_at == decision.history[1]["question"] > 300
