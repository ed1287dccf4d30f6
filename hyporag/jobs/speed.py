"""This machine's measured seconds per LM call for a model: recorded after every evaluation, read by `fit` to say
what a job will take before its first call."""

from __future__ import annotations

import json

from hyporag.atomic import write_json_atomic
from hyporag.lm.model_identity import digest
from hyporag.paths import cache_dir


def _path(roles):
    return cache_dir("speed") / f"{digest(roles.identities()['answer'])}.json"


def record_speed(roles, report: dict) -> None:
    """Add an evaluation's calls and seconds (answer and hypothesis roles alike) to the model's record."""
    calls = sum(s.get("calls_per_q", 0) * s.get("n", 0) for s in report.get("methods", []))
    seconds = sum(s.get("seconds_per_q", 0) * s.get("n", 0) for s in report.get("methods", []))
    if calls < 1 or seconds <= 0:
        return  # all cached, or nothing ran: nothing measured
    try:
        path = _path(roles)
        before = json.loads(path.read_text()) if path.is_file() else {"calls": 0, "seconds": 0.0}
        write_json_atomic(path, {"calls": before["calls"] + calls, "seconds": before["seconds"] + seconds})
    except (OSError, ValueError, KeyError, TypeError):
        return  # a speed record is a convenience: never a reason to fail a run


def seconds_per_call(roles) -> float | None:
    try:
        record = json.loads(_path(roles).read_text())
        return record["seconds"] / record["calls"] if record["calls"] else None
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
        return None
