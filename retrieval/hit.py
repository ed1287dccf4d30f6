"""A retrieved passage with its score: what every retriever returns and every program merges."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Hit:
    id: str
    title: str
    contents: str
    score: float
    found_by: tuple[int, ...] = ()  # after a multi-query merge: the queries (by position) whose lists held it

    def to_dict(self) -> dict:
        return asdict(self)
