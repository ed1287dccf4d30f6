"""Merge several queries' ranked lists into one context of at most B passages, without duplicates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hyporag.foundation.errors import ConfigError
from hyporag.retrieval.hit import Hit

MERGE_POLICIES = ("round_robin", "score", "sum")


def _summed(ranked_lists: Sequence[Sequence[Hit]], normalize: bool) -> list[Hit]:
    """HCQR's authors' merge: one entry per passage id, its scores added over the queries that found it, sorted by
    the sum. BM25 scores of different queries are on different scales, so with `normalize` each list is divided
    by its own best score first (its top passage counts 1); cosine (dense) and RRF (hybrid) scores already share
    a scale and are added as they are."""
    totals: dict[str, float] = {}
    first: dict[str, Hit] = {}
    for hits in ranked_lists:
        top = max((h.score for h in hits), default=0.0) if normalize else 1.0
        for hit in hits:
            first.setdefault(hit.id, hit)
            totals[hit.id] = totals.get(hit.id, 0.0) + (hit.score / top if top > 0 else 0.0)
    order = sorted(totals, key=lambda pid: -totals[pid])  # stable: ties keep the order they were first found
    return [Hit(first[pid].id, first[pid].title, first[pid].contents, totals[pid]) for pid in order]


def merge_to_budget(ranked_lists: Sequence[Sequence[Hit]], budget: int = 15, policy: str = "round_robin",
                    normalize: bool = False) -> list[Hit]:
    """`round_robin` interleaves the lists (each query gets its share, rank by rank); `score` takes the global
    score order (only meaningful when the lists' scores are comparable); `sum` adds each passage's scores over the
    queries that found it (see `_summed`). The first occurrence of an id wins."""
    if budget < 0:
        raise ConfigError("budget must be >= 0")
    if policy == "round_robin":
        order: list[Hit] = []
        depth = max((len(r) for r in ranked_lists), default=0)
        for rank in range(depth):
            order.extend(r[rank] for r in ranked_lists if rank < len(r))
    elif policy == "score":
        order = sorted((h for r in ranked_lists for h in r), key=lambda h: -h.score)
    elif policy == "sum":
        order = _summed(ranked_lists, normalize)
    else:
        raise ConfigError(f"unknown merge policy {policy!r}: use one of {', '.join(MERGE_POLICIES)}")
    finders: dict[str, tuple[int, ...]] = {}
    for position, ranked in enumerate(ranked_lists):
        for hit in ranked:
            finders[hit.id] = (*finders.get(hit.id, ()), position)
    merged: list[Hit] = []
    seen: set[str] = set()
    for hit in order:
        if len(merged) >= budget:
            break
        if hit.id not in seen:
            seen.add(hit.id)
            merged.append(replace(hit, found_by=finders[hit.id]))
    return merged
