"""The reader's belief in each option, as a row stores it (`option_logprobs`, `option_logprob_status`), and every
measure derived from it: log p(gold), p(gold), margin, entropy and the top option.

Derived measures are never read from a row: a writer stores them for a human reading results.jsonl, and every reader
(report, merge, view, fit's selection, tune) derives them again from the stored distribution with `rederived`. A
distribution that is not one (a letter missing, a "log probability" above 0, probabilities that do not sum to 1, an
unknown status) is damaged: its measures are None and the row says why, so a hand-edited or corrupted row can never
pass a forged p(gold) into a report. Pure Python (no DSPy): report and view import it.
"""

from __future__ import annotations

import math
from typing import Any

STATUSES = ("ok", "partial", "none", "unlocated", "unparsed")  # lm.option_probs sets these; anything else is damaged
SUM_TOLERANCE = 1e-3  # stored log-probabilities are rounded to 6 decimals: their probabilities sum to 1 within 1e-5
MEASURES = ("log_p_gold", "p_gold", "margin", "entropy")
NONE = dict.fromkeys(MEASURES)


def decision_measures(option_logprobs: dict[str, float | None] | None, status: str | None, gold: str
                      ) -> dict[str, float | None]:
    """p_gold, log p_gold, margin (log p_gold − the best other option's) and entropy (nats), from a complete
    distribution; None for every measure otherwise (a report shows "–", never an estimate)."""
    if status != "ok" or not option_logprobs or gold not in option_logprobs:
        return dict(NONE)
    gold_lp = option_logprobs[gold]
    others = [v for k, v in option_logprobs.items() if k != gold]
    return {"log_p_gold": round(gold_lp, 6), "p_gold": round(math.exp(gold_lp), 6),
            "margin": round(gold_lp - max(others), 6) if others else None,
            "entropy": round(-sum(math.exp(v) * v for v in option_logprobs.values()), 6)}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def distribution_problem(option_logprobs: Any, status: Any, gold: Any) -> str | None:
    """Why a stored distribution cannot be the reader's (None when it can): what a writer never stores."""
    if status is None and option_logprobs is None:
        return None  # rows from before option probabilities were read
    if status not in STATUSES:
        return f"status {status!r} is not one of {', '.join(STATUSES)}"
    if status != "ok":
        if option_logprobs is None:
            return None
        if status != "partial" or not isinstance(option_logprobs, dict):
            return f"status {status} with a distribution stored"
        bad = [k for k, v in option_logprobs.items() if v is not None and (not _number(v) or v > 1e-6)]
        return f"option {bad[0]}'s log probability is {option_logprobs[bad[0]]!r}" if bad else None
    if not isinstance(option_logprobs, dict) or not option_logprobs:
        return "status ok without a distribution"
    for letter, value in option_logprobs.items():
        if not _number(value):
            return f"option {letter}'s log probability is {value!r}, not a number"
        if value > 1e-6:
            return f"option {letter}'s log probability is {value:g}, above 0"
    if gold not in option_logprobs:
        return f"the gold option {gold!r} is not in the distribution ({', '.join(sorted(option_logprobs))})"
    total = sum(math.exp(v) for v in option_logprobs.values())
    if abs(total - 1.0) > SUM_TOLERANCE:
        return f"its probabilities sum to {total:.4f}, not 1"
    return None


def rederived(row: dict[str, Any]) -> dict[str, Any]:
    """The row with its belief measures derived from its own distribution; a damaged distribution gives None
    for each and `damaged_distribution` says why. The row is returned unchanged when nothing differs."""
    problem = distribution_problem(row.get("option_logprobs"), row.get("option_logprob_status"), row.get("gold"))
    measures = dict(NONE) if problem else decision_measures(row.get("option_logprobs"),
                                                            row.get("option_logprob_status"), row.get("gold"))
    changes = {k: v for k, v in measures.items() if row.get(k) != v}
    if problem:
        changes["damaged_distribution"] = problem
    return {**row, **changes} if changes else row


def top_option(option_logprobs: dict[str, float | None] | None) -> str | None:
    """The letter the reader believed most, from a complete distribution (None otherwise)."""
    known = {k: v for k, v in (option_logprobs or {}).items() if _number(v)}
    return max(known, key=lambda k: (known[k], -ord(k[0]) if k else 0)) if known else None
