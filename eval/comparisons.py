"""Paired comparisons read as they grow: each method against the baseline (or against itself in an earlier run),
question by question in the run's seeded order, decided on ONE measure of the registry (hyporag.eval.measures; a
run's `decide_on`, default p(gold)).

"better" and "worse" come from the betting test of no difference (hyporag.eval.betting_test), "equivalent" from the
confidence sequence of the mean difference lying inside +-delta (hyporag.eval.sequential), and the sequence's band is
the interval shown. Both are valid however often they are read, so a comparison may stop the run the moment it is
decided; an early "equivalent" is refined by a later "better"/"worse" (both claims then hold, each at its alpha:
the difference is real and smaller than delta). Several comparisons share one error budget: `alpha` is split evenly
(Bonferroni) over them, so the chance that any decision in a report is wrong stays below `alpha`. The registry's
other measures are shown beside the deciding one as sequences at the same alpha, labelled as not deciding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from hyporag.eval.betting_test import BettingTest
from hyporag.eval.decision import questions_for_power, questions_for_power_mcnemar
from hyporag.eval.measures import DEFAULT_DECIDING, REGISTRY, Measure, measure_named
from hyporag.eval.paper_analyses import by_method
from hyporag.eval.row import ResultRow
from hyporag.eval.sequential import BettingCS, outcome_of

ALPHA = 0.05
OUTCOMES = ("better", "worse", "equivalent", "undecided")


def run_order(settings: dict, rows: Sequence[dict]) -> list[str]:
    """The questions in the order the run asked them (its seeded list, as run.json records it)."""
    recorded = settings.get("order") or list(settings.get("question_fingerprints") or {})
    seen = set(recorded)
    return list(recorded) + sorted({r["question_id"] for r in rows} - seen)


def paired_values(mine: dict[str, ResultRow], theirs: dict[str, ResultRow], order: Sequence[str],
                  measure: Measure) -> tuple[list[float], list[int]]:
    """The paired differences (> 0 favours `mine`) in the run's order, and each one's position in it (1-based)."""
    values, positions = [], []
    for position, question in enumerate(order, start=1):
        if question in mine and question in theirs:
            d = measure.difference(mine[question], theirs[question])
            if d is not None:
                values.append(d)
                positions.append(position)
    return values, positions


def resolve_measure(name: str | None, mine: dict[str, ResultRow], theirs: dict[str, ResultRow],
                    order: Sequence[str]) -> tuple[Measure, str | None]:
    """The measure a comparison decides on: the one named, or (none named) p(gold) unless the first question both
    sides answered has no option probabilities on one side (a backend without logprobs), then accuracy: chosen from
    what the rows hold, never from which way they point. The second value says why, when it is not the default."""
    if name is not None:
        return measure_named(name), None
    default = measure_named(DEFAULT_DECIDING)
    first = next((q for q in order if q in mine and q in theirs), None)
    if first is None or default.difference(mine[first], theirs[first]) is not None:
        return default, None
    return measure_named("accuracy"), (f"{default.label} needs option probabilities, which the first paired "
                                       "question's rows lack: decided on accuracy")


@dataclass
class Decision:
    """One comparison's state: its outcome and where it was reached (a position in the run's order), what each
    earlier outcome was and where (`history`: equivalent at 17, then better at 40), the test's evidence and the
    sequence's band at the last question, and the other measures' bands beside it (not deciding)."""

    outcome: str = "undecided"
    decided_at: int | None = None
    by: str = DEFAULT_DECIDING
    why_measure: str | None = None
    alpha: float = ALPHA
    delta: float = 0.0
    paired: int = 0
    mean: float | None = None
    lower: float | None = None
    upper: float | None = None
    log_wealth: float = 0.0
    history: list[dict[str, Any]] = field(default_factory=list)
    beside: dict[str, dict[str, Any]] = field(default_factory=dict)
    fixed_n: dict | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def decide_stream(values: Sequence[float], positions: Sequence[int], measure: Measure, alpha: float,
                  delta: float, grid: int = 1000, stop: bool = False) -> Decision:
    """The betting test and the sequence read together along one comparison's paired differences (`stop`: no
    further once better or worse, as a planner's simulated run would; `grid`: the sequence's candidate means)."""
    decision = Decision(by=measure.name, alpha=alpha, delta=delta, paired=len(values))
    test, band = BettingTest(measure.span, alpha), BettingCS(-measure.span, measure.span, alpha, grid=grid)
    for value, position in zip(values, positions, strict=True):
        verdict = test.update(value)
        lower, upper = band.update(value)
        if verdict != "undecided" and decision.outcome in ("undecided", "equivalent"):
            decision.outcome, decision.decided_at = verdict, position
            decision.history.append({"outcome": verdict, "question": position, "paired": test.n})
            if stop:
                break
        elif decision.outcome == "undecided" and outcome_of(lower, upper, delta) == "equivalent":
            decision.outcome, decision.decided_at = "equivalent", position
            decision.history.append({"outcome": "equivalent", "question": position, "paired": test.n})
    if values:
        decision.mean = float(np.mean(values))
        decision.lower, decision.upper = band.lower, band.upper
        decision.log_wealth = round(test.log_wealth, 6)
    return decision


def band_of(values: Sequence[float], measure: Measure, alpha: float) -> dict[str, Any]:
    """A measure shown beside the deciding one: its sequence's band at the last question (it decides nothing)."""
    if not values:
        return {"paired": 0, "mean": None, "lower": None, "upper": None}
    sequence = BettingCS(-measure.span, measure.span, alpha)
    sequence.extend(values)
    return {"paired": len(values), "mean": float(np.mean(values)), "lower": sequence.lower, "upper": sequence.upper}


def compare_sequences(pairs: dict[str, tuple[dict[str, ResultRow], dict[str, ResultRow]]], order: Sequence[str],
                      alpha: float = ALPHA, deltas: dict[str, float] | None = None,
                      costs: dict[str, tuple[dict, dict]] | None = None, decide_on: str | None = None,
                      family: int | None = None, beside: bool = True) -> dict[str, Any]:
    """Each named comparison (rows of a method, rows of what it is compared with) decided on one measure. `family`:
    how many comparisons share alpha (default those given); `costs` (per comparison: the two sides' calls_per_q and
    seconds_per_q) prices the fixed-n test a decision is set beside; `beside` False skips the other measures' bands
    (a race reads only outcomes, after every question)."""
    deltas = deltas or {}
    each = alpha / max(1, family or len(pairs))
    out: dict[str, Any] = {"alpha": alpha, "alpha_each": each, "decide_on": decide_on or DEFAULT_DECIDING,
                           "split": f"Bonferroni over {max(1, family or len(pairs))} comparison(s), one deciding "
                                    "measure each", "deltas": {}, "comparisons": {}}
    for name, (mine, theirs) in pairs.items():
        measure, why = resolve_measure(decide_on, mine, theirs, order)
        delta = deltas.get(measure.name, measure.delta)
        out["deltas"][measure.name] = delta
        values, positions = paired_values(mine, theirs, order, measure)
        decision = decide_stream(values, positions, measure, each, delta)
        decision.why_measure = why
        decision.beside = {other.name: band_of(paired_values(mine, theirs, order, other)[0], other, each)
                           for other in REGISTRY.values() if other.name != measure.name} if beside else {}
        if costs and name in costs and decision.outcome in ("better", "worse"):
            decision.fixed_n = fixed_n_cost(values, measure, *costs[name])
        out["comparisons"][name] = decision.to_dict()
    return out


def paired_sequences(rows: list[dict], baseline: str, order: Sequence[str], alpha: float = ALPHA,
                     deltas: dict[str, float] | None = None, costs: dict[str, dict] | None = None,
                     decide_on: str | None = None, methods: Sequence[str] | None = None) -> dict[str, Any]:
    """Each method of a run (`methods`: those run.json holds, whether or not they have rows yet) against
    `baseline`, each pair on the questions both answered, in the run's order; alpha is split over every one of
    them, answered or not, so the split does not change as methods come and go."""
    grouped = by_method([r for r in rows if not r.get("error")])
    named = [m for m in (methods or grouped) if m != baseline]
    if baseline not in grouped and not methods:
        return {}
    pairs = {m: (grouped.get(m, {}), grouped.get(baseline, {})) for m in named}
    priced = {m: (costs.get(m, {}), costs.get(baseline, {})) for m in pairs} if costs else None
    result = compare_sequences(pairs, order, alpha, deltas, priced, decide_on)
    result["baseline"] = baseline
    return result


def paired_questions(mine: dict[str, ResultRow], theirs: dict[str, ResultRow],
                     measures: Sequence[str] | None = None) -> list[dict[str, float | None]]:
    """Each question both answered: its paired difference on each measure (None where one side has none), for a
    planner to resample whole questions."""
    names = list(measures or REGISTRY)
    out = [{m: REGISTRY[m].difference(mine[q], theirs[q]) for m in names} for q in mine.keys() & theirs.keys()]
    return sorted(out, key=lambda q: tuple(-9 if v is None else v for v in q.values()))


def fixed_n_cost(values: Sequence[float], measure: Measure, cost_a: dict, cost_b: dict) -> dict | None:
    """What a fixed-n test at 80% power would have spent to see the effect this comparison found: questions on the
    deciding measure, and the LM calls and seconds of both methods over them."""
    if measure.name == "accuracy":
        n = questions_for_power_mcnemar(sum(x > 0 for x in values), sum(x < 0 for x in values), len(values))
    else:
        n = questions_for_power(np.asarray(values, dtype=float))
    if n is None:
        return None
    calls = n * (cost_a.get("calls_per_q", 0) + cost_b.get("calls_per_q", 0))
    seconds = n * (cost_a.get("seconds_per_q", 0) + cost_b.get("seconds_per_q", 0))
    return {"questions": n, "calls": round(calls), "seconds": round(seconds, 1)}
