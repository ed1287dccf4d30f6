"""Each passage's own pull on the reader, judge-free: how reading it alone moved the reader's log-probability of
every option against the closed-book answer (the same call without passages). The option it raised most is the
one it pulls toward; a passage that raised nothing by PULL_FLOOR or more pulls nowhere. A passage pulling toward the
gold option is decision-useful by its effect rather than by an LM judge's label; the share of such passages is the
design card's decision-useful rate without a judge (the `pull` objective of tune and fit).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

PULL_FLOOR = 0.05  # a shift of log p below this (about 5% relative) moves nothing worth naming
DIRECTIONS = ("gold", "distractor", "none")


def _distribution(reading: dict | None) -> dict[str, float] | None:
    if not reading or reading.get("status") != "ok":
        return None
    values = reading.get("option_logprobs") or {}
    return values if values and all(isinstance(v, (int, float)) for v in values.values()) else None


def pull_of(reading: dict | None, closed_book: dict | None, gold: str) -> dict[str, Any] | None:
    """One passage's pull: the option it raised most (`toward`), by how much (`by`, in log p), the shift of the
    gold option's log p, and `direction` (gold, distractor or none); None without both distributions."""
    alone, before = _distribution(reading), _distribution(closed_book)
    if alone is None or before is None or alone.keys() != before.keys():
        return None
    shifts = {o: round(alone[o] - before[o], 4) for o in alone}
    toward = max(shifts, key=lambda o: (shifts[o], o == gold))
    by = shifts[toward]
    direction = "none" if by < PULL_FLOOR else ("gold" if toward == gold else "distractor")
    return {"toward": toward, "by": by, "gold_shift": shifts.get(gold), "direction": direction}


def passage_pulls(readings: Sequence[dict], closed_book: dict | None, gold: str) -> list[dict | None]:
    return [pull_of(r, closed_book, gold) for r in readings]


def pull_score(pulls: Sequence[dict | None]) -> float | None:
    """The share of a question's passages that pull toward gold (None when none has a pull)."""
    known = [p for p in pulls if p is not None]
    return sum(p["direction"] == "gold" for p in known) / len(known) if known else None


def pull_shares(pull_lists: Iterable[Sequence[dict | None]]) -> dict[str, Any] | None:
    """Over every passage of the rows: the share pulling toward gold, toward a distractor, and nowhere."""
    counts = dict.fromkeys(DIRECTIONS, 0)
    for pulls in pull_lists:
        for pull in pulls:
            if pull is not None and pull.get("direction") in counts:  # readers derive pulls again: eval.row.rescored
                counts[pull["direction"]] += 1
    total = sum(counts.values())
    if not total:
        return None
    return {"passages": total, **{d: round(c / total, 4) for d, c in counts.items()}}
