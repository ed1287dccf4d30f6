"""Merge several queries' ranked lists into one context of at most B passages, without duplicates."""

from __future__ import annotations

from collections.abc import Sequence

from hyporag.errors import ConfigError
from hyporag.retrieval.hit import Hit

MERGE_POLICIES = ("round_robin", "score")


def merge_to_budget(ranked_lists: Sequence[Sequence[Hit]], budget: int = 15, policy: str = "round_robin") -> list[Hit]:
    """`round_robin` interleaves the lists (each query gets its share, rank by rank); `score` takes the global
    score order (only meaningful when the lists' scores are comparable). The first occurrence of an id wins."""
    if budget < 0:
        raise ConfigError("budget must be >= 0")
    if policy == "round_robin":
        order: list[Hit] = []
        depth = max((len(r) for r in ranked_lists), default=0)
        for rank in range(depth):
            order.extend(r[rank] for r in ranked_lists if rank < len(r))
    elif policy == "score":
        order = sorted((h for r in ranked_lists for h in r), key=lambda h: -h.score)
    else:
        raise ConfigError(f"unknown merge policy {policy!r}: use one of {', '.join(MERGE_POLICIES)}")
    merged: list[Hit] = []
    seen: set[str] = set()
    for hit in order:
        if len(merged) >= budget:
            break
        if hit.id not in seen:
            seen.add(hit.id)
            merged.append(hit)
    return merged
