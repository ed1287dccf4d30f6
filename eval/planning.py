"""Before a run: how many questions a decision is expected to take, and the smallest effect a run's n can show.

The stop rule's own sequences (hyporag.eval.sequential, alpha split as the report splits it) are run on simulated
streams of paired differences: for an assumed accuracy difference (a share of questions on which exactly one of the
two methods is right, `discordance`, the rest agreeing), or by resampling the paired questions of an earlier run
(both measures at once, as they were recorded). A comparison is decided at the first question where one measure says
better or worse, or both say equivalent. Each estimate is the mean over `sims` seeded streams, with the share decided
within the run's questions; a stream not decided by then counts at the run's n, so the mean is then a lower bound.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from hyporag.eval.sequential import DELTAS, RANGES, BettingCS, outcome_of

ASSUMED_DISCORDANCE = 0.3  # medqa-dev and mmlu-med runs at B = 4: 0.2-0.35 of questions split two methods
PLAN_GRID = 250  # the sequences' grid for planning: 1/250 of the range is finer than any estimate here
DECIDING = ("accuracy", "log_p_gold_clipped")

Draw = Callable[[np.random.Generator, int], dict[str, np.ndarray]]  # one stream per measure (NaN: not paired)


@dataclass(frozen=True)
class DecisionPlan:
    """What `sims` simulated streams said: the mean and median questions to a decision (a stream undecided within
    `max_n` counts as `max_n`), and the share of streams decided within `max_n`."""

    source: str
    max_n: int
    mean_questions: float
    median_questions: float
    decided_share: float
    better_share: float  # decided "better" (the stream's method ahead), within max_n
    sims: int

    def to_dict(self) -> dict:
        return asdict(self)


def decision_point(streams: dict[str, np.ndarray], alpha_each: float, deltas: dict[str, float] | None = None,
                   grid: int = PLAN_GRID) -> tuple[int | None, str]:
    """The question at which the measures' sequences decide (and the outcome), reading them in lockstep."""
    deltas = {**DELTAS, **(deltas or {})}
    sequences = {m: BettingCS(-RANGES[m], RANGES[m], alpha_each, grid=grid) for m in streams}
    verdicts = dict.fromkeys(streams, "undecided")
    n = min(len(v) for v in streams.values())
    for t in range(n):
        for measure, values in streams.items():
            value = values[t]
            if np.isnan(value) or verdicts[measure] in ("better", "worse"):
                continue
            c = RANGES[measure]
            lower, upper = sequences[measure].update(min(c, max(-c, float(value))))
            verdicts[measure] = outcome_of(lower, upper, deltas.get(measure, 0.0))
            if verdicts[measure] in ("better", "worse"):
                return t + 1, verdicts[measure]
        if all(v == "equivalent" for v in verdicts.values()):
            return t + 1, "equivalent"
    return None, "undecided"


def simulate(draw: Draw, max_n: int, alpha_each: float, source: str, deltas: dict[str, float] | None = None,
             sims: int = 100, seed: int = 0) -> DecisionPlan:
    rng = np.random.default_rng(seed)
    points, better = [], 0
    for _ in range(sims):
        at, outcome = decision_point(draw(rng, max_n), alpha_each, deltas)
        points.append(at)
        better += outcome == "better"
    counted = np.array([max_n if p is None else p for p in points], dtype=float)
    return DecisionPlan(source, max_n, float(counted.mean()), float(np.median(counted)),
                        sum(p is not None for p in points) / sims, better / sims, sims)


def assumed_accuracy(effect: float, discordance: float = ASSUMED_DISCORDANCE) -> Draw:
    """Paired accuracy differences: +1 on (discordance + effect) / 2 of questions, -1 on (discordance - effect) / 2,
    0 on the rest (the accuracy sequence alone: an assumption says nothing of belief)."""
    if not 0 <= abs(effect) <= discordance <= 1:
        raise ValueError(f"an accuracy difference of {effect} needs at least that share of questions discordant "
                         f"(got {discordance})")
    p = [(discordance + effect) / 2, 1 - discordance, (discordance - effect) / 2]

    def draw(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        return {"accuracy": rng.choice([1.0, 0.0, -1.0], size=n, p=p)}

    return draw


def resampled(paired: Sequence[dict[str, float | None]]) -> Draw:
    """An earlier run's paired questions (each: the accuracy and log p(gold) differences), drawn with replacement
    as whole questions, so the two measures keep their relation."""
    table = np.array([[np.nan if q.get(m) is None else q[m] for m in DECIDING] for q in paired], dtype=float)
    if not len(table):
        raise ValueError("no paired questions to resample")

    def draw(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        picked = table[rng.integers(0, len(table), size=n)]
        return {m: picked[:, i] for i, m in enumerate(DECIDING) if not np.isnan(table[:, i]).all()}

    return draw


def smallest_detectable(n: int, alpha_each: float, discordance: float = ASSUMED_DISCORDANCE, power: float = 0.8,
                        sims: int = 40, seed: int = 0) -> float | None:
    """The smallest accuracy difference (to 0.01) that `n` questions decide "better" in at least `power` of the
    streams, with `discordance` of questions split; None when not even every discordant question going one way
    would."""
    def enough(effect: float) -> bool:
        plan = simulate(assumed_accuracy(effect, discordance), n, alpha_each, "", sims=sims, seed=seed)
        return plan.better_share >= power

    if not enough(discordance):
        return None
    low, high = 0.0, discordance
    while high - low > 0.01:
        middle = (low + high) / 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return round(high, 3)
