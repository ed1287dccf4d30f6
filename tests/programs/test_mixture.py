"""The mixture's arithmetic: both rules give distributions, the prior's weight is w0, a passage's weight falls
with its rank at the temperature given, and with w0 = 0 one passage is its own reading."""

from __future__ import annotations

import math

import pytest

from hyporag.programs.mixture import mix, rank_weights, vote

LETTERS = ["A", "B", "C"]


def dist(*p: float) -> dict[str, float]:
    return {o: math.log(v) for o, v in zip(LETTERS, p, strict=True)}


def total(d: dict[str, float]) -> float:
    return sum(math.exp(v) for v in d.values())


def test_rank_weights_sum_to_one_and_flatten_as_the_temperature_rises():
    sharp, flat = rank_weights(4, 0.5), rank_weights(4, 100.0)
    assert sum(sharp) == pytest.approx(1) and sum(flat) == pytest.approx(1)
    assert sharp[0] > sharp[1] > sharp[2] > sharp[3] and max(flat) - min(flat) < 0.01
    assert sharp[0] / sharp[1] == pytest.approx(math.exp(2))
    with pytest.raises(ValueError, match="temperature"):
        rank_weights(2, 0)


@pytest.mark.parametrize("rule", ["linear", "loglinear"])
def test_both_rules_give_distributions_and_weigh_the_prior_by_w0(rule):
    prior, readings = dist(0.5, 0.3, 0.2), [dist(0.1, 0.8, 0.1), dist(0.6, 0.2, 0.2)]
    mixed, weights = mix(prior, readings, LETTERS, 0.25, 1.0, rule)
    assert total(mixed) == pytest.approx(1, abs=1e-5)
    assert weights[0] == 0.25 and sum(weights) == pytest.approx(1)
    assert weights[1] / weights[2] == pytest.approx(math.e, rel=1e-4)  # rank 1 against rank 2 at temperature 1
    only_prior, _ = mix(prior, readings, LETTERS, 1.0, 1.0, rule)
    assert only_prior == pytest.approx(prior, abs=1e-6)


def test_the_linear_rule_is_the_weighted_average_of_probabilities():
    prior, readings = dist(0.5, 0.3, 0.2), [dist(0.1, 0.8, 0.1), dist(0.6, 0.2, 0.2)]
    mixed, (w0, w1, w2) = mix(prior, readings, LETTERS, 0.2, 1.0, "linear")
    for i, option in enumerate(LETTERS):
        expected = w0 * [0.5, 0.3, 0.2][i] + w1 * [0.1, 0.8, 0.1][i] + w2 * [0.6, 0.2, 0.2][i]
        assert math.exp(mixed[option]) == pytest.approx(expected, abs=1e-5)


def test_the_loglinear_rule_lets_a_confident_no_veto_an_option():
    readings = [dist(0.98, 0.01, 0.01), dist(0.001, 0.5, 0.499)]
    linear, _ = mix(None, readings, LETTERS, 0.0, 100.0, "linear")
    product, _ = mix(None, readings, LETTERS, 0.0, 100.0, "loglinear")
    assert max(linear, key=linear.get) == "A" and max(product, key=product.get) == "B"


@pytest.mark.parametrize("rule", ["linear", "loglinear"])
def test_with_no_prior_weight_one_passage_is_its_own_reading(rule):
    reading = dist(0.2, 0.7, 0.1)
    mixed, weights = mix(dist(0.9, 0.05, 0.05), [reading], LETTERS, 0.0, 1.0, rule)
    assert mixed == pytest.approx(reading, abs=1e-6) and weights == [0.0, 1.0]


def test_a_reading_without_a_distribution_is_left_out_and_the_rest_renormalised():
    mixed, weights = mix(dist(0.5, 0.3, 0.2), [None, dist(0.1, 0.8, 0.1)], LETTERS, 0.5, 1.0, "linear")
    assert weights == [0.5, 0.0, 0.5] and total(mixed) == pytest.approx(1, abs=1e-5)
    assert mix(None, [None, None], LETTERS, 0.2, 1.0) == (None, [0.0, 0.0, 0.0])
    assert vote("A", ["B", "B"], LETTERS, 0.2, 1.0) == "B" and vote("A", ["B", None], LETTERS, 0.9, 1.0) == "A"
