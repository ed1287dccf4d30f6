"""fit's selection rule on validation rows: an advantage on too few questions does not replace rag (a bootstrap
interval on 7 questions is too narrow to trust; the confidence sequence says undecided), the same advantage on enough
questions does, and a
method's cost per question is its own even when its validation answers came from the cache."""

from __future__ import annotations

import numpy as np

from hyporag.optimizers.selection import SelectionRule, select
from tests.eval.test_decision_margin import rows_of


def _pair(n: int, seed: int = 0) -> list[dict]:
    """hcqr right on every question, rag on every other one; hcqr's p(gold) a little higher on each."""
    rng = np.random.default_rng(seed)
    base = list(np.log(rng.uniform(0.55, 0.7, n)))
    better = [min(-1e-3, v + 0.2) for v in base]
    return rows_of("rag", base, [i % 2 == 0 for i in range(n)]) + rows_of("hcqr", better, [True] * n)


def test_an_edge_on_seven_questions_keeps_rag_and_on_forty_replaces_it():
    rule = SelectionRule()
    small = select(_pair(7), ["rag", "hcqr"], rule)
    assert small["paired_vs_simplest"]["hcqr"]["log_p_gold_clipped"]["ci95_low"] > 0  # the interval says yes...
    assert small["chosen"] == "rag"  # ...on too few questions for a sequence to say so
    assert small["sequences_vs_simplest"]["comparisons"]["hcqr"]["outcome"] == "undecided"
    assert "by a betting test" in small["rule"]["text"]
    large = select(_pair(40), ["rag", "hcqr"], rule, order=[f"q{i}" for i in range(40)])
    assert large["chosen"] == "hcqr" and large["verdicts"]["hcqr"] == "beats the simplest with the error guarantee"
    assert large["sequences_vs_simplest"]["comparisons"]["hcqr"]["decided_at"] <= 40
    assert select(_pair(40), ["rag", "hcqr"], SelectionRule(alpha=1e-6))["chosen"] == "rag"  # a stricter alpha waits


def test_cached_validation_answers_do_not_make_a_method_free():
    rows = _pair(40)
    for row in rows:
        row["calls"] = 0  # every answer served from the cache of the tuning stage
    rule = SelectionRule(max_calls_per_question=2)
    chosen = select(rows, ["rag", "hcqr"], rule, declared_calls={"rag": 1.0, "hcqr": 3.0})
    assert chosen["scores"]["hcqr"]["calls_per_q"] == 3.0 and chosen["verdicts"]["hcqr"] == "over the LM-call cap"
    assert chosen["chosen"] == "rag"
