"""Per-question cost by role: LM calls, input/output tokens and seconds, read from DSPy's usage tracker.

Cached responses add no usage, so a re-run served from DSPy's cache reports zero calls: that is the point.
Input tokens are what was sent; `cached_tokens` are those the backend served from its own prompt cache (llama.cpp,
OpenAI), so sent − cached is what it processed. A backend that does not report its cache leaves that unknown.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import dspy


def _cached(entry: dict) -> int | None:
    details = entry.get("prompt_tokens_details")
    value = details.get("cached_tokens") if isinstance(details, dict) else None
    return int(value) if isinstance(value, int | float) else None


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
                                                      "seconds": 0.0, "cached_tokens": 0, "cache_unreported": 0})
                for entries in tracker.usage_data.values():
                    for entry in entries:
                        record["calls"] += 1
                        record["input_tokens"] += _tokens(entry, "prompt_tokens", "input_tokens")
                        record["output_tokens"] += _tokens(entry, "completion_tokens", "output_tokens")
                        cached = _cached(entry)
                        if cached is None:
                            record["cache_unreported"] += 1
                        else:
                            record["cached_tokens"] += cached
                record["seconds"] += time.perf_counter() - started

    def totals(self) -> dict[str, float]:
        keys = ("calls", "input_tokens", "output_tokens", "seconds", "cached_tokens", "cache_unreported")
        return {k: sum(r[k] for r in self.roles.values()) for k in keys}

    def as_dict(self) -> dict:
        roles = {k: {**v, "processed_tokens": processed(v)} for k, v in self.roles.items()}
        totals = self.totals()
        return {"by_role": roles, **totals, "processed_tokens": processed(totals)}


def processed(cost: dict) -> int | None:
    """Prompt tokens the backend processed (sent − served from its cache); None when a call did not report it."""
    if cost.get("cache_unreported"):
        return None
    return int(cost.get("input_tokens", 0) - cost.get("cached_tokens", 0))
