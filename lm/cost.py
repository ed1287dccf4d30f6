"""Per-question cost by role: LM calls, input/output tokens and seconds, read from DSPy's usage tracker.

A reply served from DSPy's cache is still one of the question's calls: it is counted (with the tokens its original
call used, stored in the cache record) and marked `cache_hits`, so a question's cost is the method's own whether or
not it was interrupted and resumed from the cache; `cache_hits` says how much of it this run did not pay for.
Input tokens are what was sent; `cached_tokens` are those the backend served from its own prompt cache (llama.cpp,
OpenAI), so sent − cached is what it processed. A backend that does not report its cache leaves that unknown.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import dspy

# the usage of each reply DSPy served from its cache while a step runs (hyporag.lm.model_identity.RoutingCache
# reports them): DSPy's usage tracker skips cache hits
_HITS: contextvars.ContextVar[list[dict] | None] = contextvars.ContextVar("hyporag_cache_hits", default=None)


def note_cache_hit(record: Any) -> None:
    """A cache record DSPy is about to serve: its original usage counts as one call of the running step."""
    sink = _HITS.get()
    if sink is None:
        return
    usage = record.get("usage") if isinstance(record, dict) else getattr(record, "usage", None)
    if usage is not None and not isinstance(usage, dict):
        usage = usage.model_dump() if hasattr(usage, "model_dump") else dict(usage)
    sink.append(dict(usage or {}))


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


EMPTY = {"calls": 0, "input_tokens": 0, "output_tokens": 0, "seconds": 0.0, "cached_tokens": 0, "cache_unreported": 0,
         "cache_hits": 0}


class CostMeter:
    """Accumulates one question's cost; `step(role)` wraps each LM-using step."""

    def __init__(self) -> None:
        self.roles: dict[str, dict[str, float]] = {}

    @contextmanager
    def step(self, role: str) -> Iterator[None]:
        started = time.perf_counter()
        parent, token = _HITS.get(), _HITS.set([])
        with dspy.track_usage() as tracker:
            try:
                yield
            finally:
                hits = _HITS.get() or []
                _HITS.reset(token)
                if parent is not None:  # a step inside another: the outer one counts them too (as DSPy's tracker)
                    parent.extend(hits)
                record = self.roles.setdefault(role, dict(EMPTY))
                entries = [e for es in tracker.usage_data.values() for e in es]
                for entry in [*entries, *hits]:
                    record["calls"] += 1
                    record["input_tokens"] += _tokens(entry, "prompt_tokens", "input_tokens")
                    record["output_tokens"] += _tokens(entry, "completion_tokens", "output_tokens")
                    cached = _cached(entry)
                    if cached is None:
                        record["cache_unreported"] += 1
                    else:
                        record["cached_tokens"] += cached
                record["cache_hits"] = record.get("cache_hits", 0) + len(hits)
                record["seconds"] += time.perf_counter() - started

    def totals(self) -> dict[str, float]:
        return {k: sum(r.get(k, 0) for r in self.roles.values()) for k in EMPTY}

    def as_dict(self) -> dict:
        roles = {k: {**v, "processed_tokens": processed(v)} for k, v in self.roles.items()}
        totals = self.totals()
        return {"by_role": roles, **totals, "processed_tokens": processed(totals)}


def live_calls(cost: dict) -> int:
    """The calls a step made to the backend this time: its calls less those DSPy served from its cache."""
    return int(cost.get("calls", 0) - cost.get("cache_hits", 0))


def processed(cost: dict) -> int | None:
    """Prompt tokens the backend processed (sent − served from its cache); None when a call did not report it."""
    if cost.get("cache_unreported"):
        return None
    return int(cost.get("input_tokens", 0) - cost.get("cached_tokens", 0))
