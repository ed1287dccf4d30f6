"""Before a run: how many questions a decision is expected to take, and the smallest effect a run's n can show, in
the run's deciding measure (hyporag.eval.measures).

The stop rule's own test and sequence (hyporag.eval.comparisons.decide_stream, alpha split as the report splits it)
are run on simulated streams of paired differences: for an assumed difference on the deciding measure (accuracy: a
share of questions on which exactly one of the two methods is right, `discordance`; a continuous measure: normal
differences of the measure's typical spread, clipped to its range), or by resampling the paired questions of an
earlier run. A comparison is decided at the first question where it is better, worse or equivalent. Each estimate is
the mean over `sims` seeded streams, with the share decided within the run's questions; a stream not decided by
then counts at the run's n, so the mean is then a lower bound.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from hyporag.eval.comparisons import decide_stream
from hyporag.eval.measures import Measure

ASSUMED_DISCORDANCE = 0.3  # medqa-dev and mmlu-med runs at B = 4: 0.2-0.35 of questions split two methods
# the spread of paired differences a plan assumes for a continuous measure (sd), from hyporag's recorded rows
# (docs/results/sequential.md); accuracy's is its discordance instead
ASSUMED_SPREAD = {"p_gold": 0.25, "log_p_gold_clipped": 0.9, "margin": 1.6, "brier": 0.35}
PLANNING_EFFECT = {"accuracy": 0.1, "p_gold": 0.05, "log_p_gold_clipped": 0.15, "margin": 0.3, "brier": 0.05}
PLAN_GRID = 250  # the sequences' grid for planning: 1/250 of the range is finer than any estimate here

Draw = Callable[[np.random.Generator, int], np.ndarray]  # one stream of paired differences (NaN: not paired)


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


def decision_point(stream: np.ndarray, measure: Measure, alpha_each: float, delta: float | None = None
                   ) -> tuple[int | None, str]:
    """The question (count) at which the comparison decides, and its outcome."""
    values = [float(v) for v in stream if not np.isnan(v)]
    decision = decide_stream(values, list(range(1, len(values) + 1)), measure, alpha_each,
                             measure.delta if delta is None else delta, grid=PLAN_GRID, stop=True)
    first = decision.history[0] if decision.history else None
    return (first["question"], first["outcome"]) if first else (None, "undecided")


def simulate(draw: Draw, max_n: int, alpha_each: float, source: str, measure: Measure, delta: float | None = None,
             sims: int = 100, seed: int = 0) -> DecisionPlan:
    rng = np.random.default_rng(seed)
    points, better = [], 0
    for _ in range(sims):
        at, outcome = decision_point(draw(rng, max_n), measure, alpha_each, delta)
        points.append(at)
        better += outcome == "better"
    counted = np.array([max_n if p is None else p for p in points], dtype=float)
    return DecisionPlan(source, max_n, float(counted.mean()), float(np.median(counted)),
                        sum(p is not None for p in points) / sims, better / sims, sims)


def assumed(effect: float, measure: Measure, discordance: float = ASSUMED_DISCORDANCE) -> Draw:
    """Paired differences with mean `effect` on `measure`. Accuracy: +1 on (discordance + effect) / 2 of questions,
    -1 on (discordance - effect) / 2, 0 on the rest; a continuous measure: normal with its assumed spread, clipped
    to its range."""
    if measure.name == "accuracy":
        if not 0 <= abs(effect) <= discordance <= 1:
            raise ValueError(f"an accuracy difference of {effect} needs at least that share of questions "
                             f"discordant (got {discordance})")
        p = [(discordance + effect) / 2, 1 - discordance, (discordance - effect) / 2]

        def draw(rng: np.random.Generator, n: int) -> np.ndarray:
            return rng.choice([1.0, 0.0, -1.0], size=n, p=p)

        return draw
    spread = ASSUMED_SPREAD.get(measure.name, measure.span / 4)

    def draw_continuous(rng: np.random.Generator, n: int) -> np.ndarray:
        return np.clip(rng.normal(effect, spread, n), -measure.span, measure.span)

    return draw_continuous


def resampled(paired: Sequence[dict[str, float | None]], measure: Measure) -> Draw:
    """An earlier run's paired questions' differences on `measure`, drawn with replacement as whole questions."""
    table = np.array([np.nan if q.get(measure.name) is None else q[measure.name] for q in paired], dtype=float)
    if not len(table) or np.isnan(table).all():
        raise ValueError(f"no paired questions with {measure.label} to resample")

    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        return table[rng.integers(0, len(table), size=n)]

    return draw


def smallest_detectable(n: int, alpha_each: float, measure: Measure, power: float = 0.8, sims: int = 40,
                        seed: int = 0) -> float | None:
    """The smallest difference on `measure` (to 1% of its range) that `n` questions decide "better" in at least
    `power` of the streams; None when not even the largest would."""
    top = ASSUMED_DISCORDANCE if measure.name == "accuracy" else measure.span / 2

    def enough(effect: float) -> bool:
        return simulate(assumed(effect, measure), n, alpha_each, "", measure, sims=sims,
                        seed=seed).better_share >= power

    if not enough(top):
        return None
    low, high = 0.0, top
    while high - low > measure.span / 100:
        middle = (low + high) / 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return round(high, 3)

