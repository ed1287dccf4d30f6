"""This machine's measured seconds per LM call for a model at a context budget: recorded after every evaluation,
read by `fit` to say what a job will take before its first call.

Keyed by budget because an answer call's time grows with its prompt (the embedded 1.5B takes ~10 s at B = 4 and
~50 s at B = 15 here): one record per model would price a B = 4 fit at the B = 15 rate. The record decays so that
recent runs (a busy machine, a new engine build) outweigh old ones."""

from __future__ import annotations

import json

from hyporag.foundation.atomic import write_json_atomic
from hyporag.foundation.paths import cache_dir
from hyporag.lm.model_identity import digest

KEEP_CALLS = 200  # older calls are scaled down past this many, so the record follows the machine's current speed


def _path(roles, budget: int | None):
    return cache_dir("speed") / f"{digest(roles.identities()['answer'])}-b{budget or 0}.json"


def record_run_speed(roles, report: dict, recorded: dict) -> None:
    """Record an evaluation's speed at the budget its run.json names (a per-method budget: not one B, so none)."""
    budget = recorded.get("budget")
    record_speed(roles, report, budget if isinstance(budget, int) else None)


def record_speed(roles, report: dict, budget: int | None) -> None:
    """Add an evaluation's calls and seconds (answer and hypothesis roles alike) to the model's record for `budget`
    (None: no retrieval)."""
    calls = sum(s.get("calls_per_q", 0) * s.get("n", 0) - s.get("cache_hits", 0) for s in report.get("methods", []))
    seconds = sum(s.get("seconds_per_q", 0) * s.get("n", 0) for s in report.get("methods", []))
    record_calls(roles, calls, seconds, budget)


def record_calls(roles, calls: float, seconds: float, budget: int | None) -> None:
    """Add `calls` made to the backend in `seconds` (a fit's tune or compile stage, an evaluation) to the record."""
    if calls < 1 or seconds <= 0:
        return  # all cached, or nothing ran: nothing measured
    try:
        path = _path(roles, budget)
        before = json.loads(path.read_text()) if path.is_file() else {"calls": 0, "seconds": 0.0}
        keep = min(1.0, KEEP_CALLS / max(before["calls"] + calls, 1))
        write_json_atomic(path, {"calls": (before["calls"] + calls) * keep,
                                 "seconds": (before["seconds"] + seconds) * keep})
    except (OSError, ValueError, KeyError, TypeError):
        return  # a speed record is a convenience: never a reason to fail a run


def seconds_per_call(roles, budget: int | None) -> tuple[float, int] | None:
    """Seconds per call and the budget they were measured at: this budget's record, else the nearest budget's
    (the caller says which), else None."""
    records = {}
    stem = digest(roles.identities()["answer"])
    for path in cache_dir("speed").glob(f"{stem}-b*.json"):
        try:
            record = json.loads(path.read_text())
            records[int(path.stem.rsplit("-b", 1)[1])] = record["seconds"] / record["calls"]
        except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
            continue
    if not records:
        return None
    nearest = min(records, key=lambda b: (abs(b - (budget or 0)), b))
    return records[nearest], nearest
