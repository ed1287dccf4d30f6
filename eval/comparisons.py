"""A run's paired comparisons read as sequences: each method against the baseline (or each method against itself
in an earlier run), question by question in the run's seeded order, on accuracy and on the lead measure (clipped
log p(gold); the margin beside it), with the confidence sequences of hyporag.eval.sequential.

Several comparisons share one error budget: `alpha` is split evenly (Bonferroni) over every sequence that can
decide (two per comparison), so the chance that any decision in the report is wrong stays below `alpha` however
often the report is read. A decided comparison says at which question it was decided and what a fixed-n test of
80% power at the effect it found would have needed (questions, LM calls, seconds at the run's own cost).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hyporag.eval.decision import LEAD, MEASURES, questions_for_power, questions_for_power_mcnemar
from hyporag.eval.paper_analyses import by_method
from hyporag.eval.row import ResultRow
from hyporag.eval.sequential import DELTAS, combined, read_sequence

DECIDING = ("accuracy", LEAD)  # the sequences that decide; the margin is read beside them
ALPHA = 0.05


def run_order(settings: dict, rows: Sequence[dict]) -> list[str]:
    """The questions in the order the run asked them (its seeded list, as run.json records it)."""
    recorded = settings.get("order") or list(settings.get("question_fingerprints") or {})
    seen = set(recorded)
    return list(recorded) + sorted({r["question_id"] for r in rows} - seen)


def _value(row: ResultRow, measure: str) -> float | None:
    if measure == "accuracy":
        return float(bool(row.correct))
    value = MEASURES[measure][0](row) if measure in MEASURES else None
    return None if value is None else max(-5.0, min(5.0, value))


def paired_values(mine: dict[str, ResultRow], theirs: dict[str, ResultRow], order: Sequence[str], measure: str
                  ) -> tuple[list[float], list[int]]:
    """The paired differences in the run's order, and each one's position in that order (1-based)."""
    values, positions = [], []
    for position, question in enumerate(order, start=1):
        if question in mine and question in theirs:
            a, b = _value(mine[question], measure), _value(theirs[question], measure)
            if a is not None and b is not None:
                values.append(a - b)
                positions.append(position)
    return values, positions


def paired_questions(mine: dict[str, ResultRow], theirs: dict[str, ResultRow]) -> list[dict[str, float | None]]:
    """Each question both answered: its paired differences on the deciding measures (None where one side has no
    option probabilities), for a planner to resample whole questions."""
    out = []
    for question in mine.keys() & theirs.keys():
        values = {m: (_value(mine[question], m), _value(theirs[question], m)) for m in DECIDING}
        out.append({m: None if a is None or b is None else a - b for m, (a, b) in values.items()})
    return sorted(out, key=lambda q: tuple(-9 if v is None else v for v in q.values()))


def compare_sequences(pairs: dict[str, tuple[dict[str, ResultRow], dict[str, ResultRow]]], order: Sequence[str],
                      alpha: float = ALPHA, deltas: dict[str, float] | None = None,
                      costs: dict[str, tuple[dict, dict]] | None = None) -> dict[str, Any]:
    """Each named comparison (rows of a method, rows of what it is compared with) read as sequences; `costs` (per
    comparison: the two sides' calls_per_q and seconds_per_q) prices the fixed-n test it is set beside."""
    deltas = {**DELTAS, **(deltas or {})}
    each = alpha / max(1, len(DECIDING) * len(pairs))
    out: dict[str, Any] = {"alpha": alpha, "alpha_each": each, "split": f"Bonferroni over {len(DECIDING)} sequences "
                           f"x {len(pairs)} comparison(s)", "deltas": deltas, "comparisons": {}}
    for name, (mine, theirs) in pairs.items():
        verdicts, where, differences = {}, {}, {}
        for measure in (*DECIDING, "margin"):
            values, positions = paired_values(mine, theirs, order, measure)
            differences[measure] = values
            verdict = read_sequence(values, measure, each, deltas.get(measure))
            verdicts[measure] = verdict
            where[measure] = positions[verdict.decided_at - 1] if verdict.decided_at else None
        outcome, decided_at = combined([verdicts[m] for m in DECIDING])
        deciding = next((m for m in DECIDING if verdicts[m].decided_at == decided_at), None) if decided_at else None
        comparison = {"outcome": outcome, "decided_at": where.get(deciding) if deciding else None, "by": deciding,
                      "paired": {m: v.n for m, v in verdicts.items()},
                      "measures": {m: {**v.to_dict(), "question": where[m]} for m, v in verdicts.items()}}
        if costs and name in costs:
            comparison["fixed_n"] = fixed_n_cost(comparison, *costs[name], differences)
        out["comparisons"][name] = comparison
    return out


def paired_sequences(rows: list[dict], baseline: str, order: Sequence[str], alpha: float = ALPHA,
                     deltas: dict[str, float] | None = None, costs: dict[str, dict] | None = None) -> dict[str, Any]:
    """Each method of a run against `baseline`, on the questions both answered, in the run's order; `costs` (per
    method: calls_per_q, seconds_per_q) prices the fixed-n test beside each decision."""
    grouped = by_method([r for r in rows if not r.get("error")])
    if baseline not in grouped:
        return {}
    pairs = {m: (qs, grouped[baseline]) for m, qs in grouped.items() if m != baseline}
    priced = {m: (costs.get(m, {}), costs.get(baseline, {})) for m in pairs} if costs else None
    result = compare_sequences(pairs, order, alpha, deltas, priced)
    result["baseline"] = baseline
    return result


def fixed_n_cost(comparison: dict, cost_a: dict, cost_b: dict, differences: dict[str, list[float]]) -> dict | None:
    """What a fixed-n test at 80% power would have spent to see the effect this comparison found: questions (by the
    measure that decided it), and the LM calls and seconds of both methods over them."""
    measure = comparison.get("by")
    if measure is None:
        return None
    d = differences.get(measure) or []
    if measure == "accuracy":
        n = questions_for_power_mcnemar(sum(x > 0 for x in d), sum(x < 0 for x in d), len(d))
    else:
        n = questions_for_power(np.asarray(d, dtype=float))
    if n is None:
        return None
    calls = n * (cost_a.get("calls_per_q", 0) + cost_b.get("calls_per_q", 0))
    seconds = n * (cost_a.get("seconds_per_q", 0) + cost_b.get("seconds_per_q", 0))
    return {"questions": n, "calls": round(calls), "seconds": round(seconds, 1)}
