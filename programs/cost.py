"""Per-question cost by role: LM calls, input/output tokens and seconds, read from DSPy's usage tracker.

Cached responses add no usage, so a re-run served from DSPy's cache reports zero calls: that is the point.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import dspy


def _tokens(entry: dict, *names: str) -> int:
    for name in names:
        value = entry.get(name)
        if isinstance(value, int | float):
            return int(value)
    return 0


class CostMeter:
    """Accumulates one question's cost; `step(role)` wraps each LM-using step."""

    def __init__(self) -> None:
        self.roles: dict[str, dict[str, float]] = {}

    @contextmanager
    def step(self, role: str) -> Iterator[None]:
        started = time.perf_counter()
        with dspy.track_usage() as tracker:
            try:
                yield
            finally:
                record = self.roles.setdefault(role, {"calls": 0, "input_tokens": 0, "output_tokens": 0,
                                                      "seconds": 0.0})
                for entries in tracker.usage_data.values():
                    for entry in entries:
                        record["calls"] += 1
                        record["input_tokens"] += _tokens(entry, "prompt_tokens", "input_tokens")
                        record["output_tokens"] += _tokens(entry, "completion_tokens", "output_tokens")
                record["seconds"] += time.perf_counter() - started

    def totals(self) -> dict[str, float]:
        keys = ("calls", "input_tokens", "output_tokens", "seconds")
        return {k: sum(r[k] for r in self.roles.values()) for k in keys}

    def as_dict(self) -> dict:
        return {"by_role": {k: dict(v) for k, v in self.roles.items()}, **self.totals()}
