"""The deciding measures, as one registry: what a comparison of two methods can be decided on.

Each entry says, once, how a question's value is read from a row, the range a value lies in, which way is better,
the equivalence margin a run uses unless told otherwise, and how a report labels it. Everything that decides or
shows a decision reads the registry: the sequences and the betting test (hyporag.eval.sequential,
hyporag.eval.betting_test), the report and the page, the plan, the CI gate, the fit's race and selection, and the
settings that name a measure (`--decide-on`, `--delta`). Adding a measure is one `register` call; a paired
difference is always oriented so that a positive value favours the first method, whichever way the measure runs.

Pure Python (no DSPy): report and view import it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from hyporag.eval.row import ResultRow

LOG_P_FLOOR = -5.0  # log p(gold) clipped here: a confidently wrong 1.5B gives -10 to -30, a tail that costs power
MARGIN_CLIP = 5.0


@dataclass(frozen=True)
class Measure:
    """One deciding measure. `value(row)` is None where a row has none (no option probabilities, an errored row):
    such a question is left out of this measure's comparison, and counted."""

    name: str
    label: str
    value: Callable[[ResultRow], float | None]
    low: float
    high: float
    higher_is_better: bool
    delta: float  # the default equivalence margin: |mean difference| below it counts as "equivalent"
    unit: str = ""  # what a difference is in ("points of accuracy", "nats", ...), for one-line messages

    @property
    def span(self) -> float:
        """c: a paired difference lies in [-c, c]."""
        return self.high - self.low

    def difference(self, mine: ResultRow, theirs: ResultRow) -> float | None:
        """mine − theirs, oriented so that > 0 favours `mine`, clipped to [-c, c]; None when either side has no
        value."""
        a, b = self.value(mine), self.value(theirs)
        if a is None or b is None:
            return None
        d = (a - b) if self.higher_is_better else (b - a)
        return max(-self.span, min(self.span, d))

    def check_delta(self, delta: float, where: str = "--delta") -> str | None:
        """Why `delta` cannot be this measure's equivalence margin (None when it can): it must lie inside the
        range a mean difference can take, (0, c)."""
        if not isinstance(delta, (int, float)) or isinstance(delta, bool) or not math.isfinite(delta):
            return f"{where}: {delta!r} is not a number"
        if not 0 < delta < self.span:
            hint = (f"; {delta:g} looks like a percentage: give {delta / 100:g}" if 1 <= delta <= 100
                    and self.span <= 2 else "")
            return (f"{where}: {self.label} differences lie in [-{self.span:g}, {self.span:g}], so an equivalence "
                    f"margin must be above 0 and below {self.span:g}, got {delta:g}{hint}")
        return None


def _accuracy(row: ResultRow) -> float | None:
    return None if row.error else float(bool(row.correct))


def _complete(row: ResultRow) -> bool:
    return row.option_logprob_status == "ok" and bool(row.option_logprobs) and not row.damaged_distribution \
        and row.gold in (row.option_logprobs or {})


def _p_gold(row: ResultRow) -> float | None:
    return math.exp(row.option_logprobs[row.gold]) if _complete(row) else None


def _log_p_gold(row: ResultRow) -> float | None:
    return max(LOG_P_FLOOR, row.option_logprobs[row.gold]) if _complete(row) else None


def _margin(row: ResultRow) -> float | None:
    if not _complete(row) or len(row.option_logprobs) < 2:
        return None
    gold = row.option_logprobs[row.gold]
    other = max(v for k, v in row.option_logprobs.items() if k != row.gold)
    return max(-MARGIN_CLIP, min(MARGIN_CLIP, gold - other))


def _brier(row: ResultRow) -> float | None:
    """Σ over the options of (p − y)²: 0 for certainty on gold, 2 for certainty on a wrong option."""
    if not _complete(row):
        return None
    return sum((math.exp(v) - (k == row.gold)) ** 2 for k, v in row.option_logprobs.items())


REGISTRY: dict[str, Measure] = {}


def register(measure: Measure) -> Measure:
    """Add a deciding measure (or replace one of that name): every reader of the registry takes it from then on."""
    if measure.high <= measure.low or not 0 < measure.delta < measure.span:
        raise ValueError(f"measure {measure.name!r}: needs low < high and 0 < delta < {measure.span:g}")
    REGISTRY[measure.name] = measure
    return measure


for _entry in (
    Measure("accuracy", "accuracy", _accuracy, 0.0, 1.0, True, 0.05, "of accuracy"),
    Measure("p_gold", "p(gold)", _p_gold, 0.0, 1.0, True, 0.05, "of probability"),
    Measure("log_p_gold_clipped", f"log p(gold) (clipped at {LOG_P_FLOOR:g})", _log_p_gold, LOG_P_FLOOR, 0.0, True,
            0.1, "nats"),
    Measure("margin", f"margin (clipped to ±{MARGIN_CLIP:g})", _margin, -MARGIN_CLIP, MARGIN_CLIP, True, 0.2,
            "nats"),
    Measure("brier", "Brier score", _brier, 0.0, 2.0, False, 0.05, ""),
):
    register(_entry)

DEFAULT_DECIDING = "p_gold"  # docs/results/sequential.md: decides soonest on hyporag's rows at type-I below alpha


def measure_named(name: str) -> Measure:
    if name not in REGISTRY:
        raise KeyError(f"no deciding measure {name!r} (registered: {', '.join(REGISTRY)})")
    return REGISTRY[name]
