"""One result row: the record `hyporag eval` appends per (question, method), and what every reader may rely on.

Rows are JSON objects on disk (results.jsonl); this is their one definition. Readers use `ResultRow.of(dict)`
(attribute access, defaults for fields an older run did not write) instead of string keys of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


def processed_of(cost: dict) -> int | None:
    """A cost's processed prompt tokens: 0 when it made no call, None when unknown (rows from before the count)."""
    return cost.get("processed_tokens", 0 if not cost.get("calls") else None)


@dataclass
class ResultRow:
    question_id: str
    method: str
    question_fingerprint: str | None = None  # question text, options and gold this row answered (None: older runs)
    answer: str | None = None
    gold: str = ""
    correct: bool = False
    parse_failure: bool = False
    answer_reply: str | None = None  # the answer field as the LM wrote it (an unparseable one included)
    answer_reasoning: str | None = None  # the reasoning before the choice, when the protocol asks for it
    fallbacks: dict = field(default_factory=dict)  # kind ("query", "contrast", ...) -> why, or how often
    details: dict = field(default_factory=dict)  # the program's own per-question fields (its row_fields)
    error: str | None = None
    passage_ids: list[str] = field(default_factory=list)
    passage_scores: list[float] = field(default_factory=list)  # each passage's retrieval score, in context order
    passage_found_by: list[list[int]] = field(default_factory=list)  # positions in `queries` that found each
    queries: list[str] = field(default_factory=list)
    hypothesis: dict | None = None
    hypothesis_option: str | None = None  # the option the hypothesis names (HCQR's letter; CHR's H+ by option text)
    retrieval_sees_options: bool | None = None
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    processed_tokens: int | None = None  # prompt tokens the backend processed (sent − its cache); None: unreported
    cost_by_role: dict = field(default_factory=dict)
    seconds: float = 0.0
    gold_in_context: bool | None = None
    distractor_in_context: bool | None = None
    judge_label: str | None = None
    judge_reason: str | None = None
    judge_calls: int = 0
    judge_input_tokens: int = 0
    judge_output_tokens: int = 0
    judge_seconds: float = 0.0
    judge_error: str | None = None
    score: float | None = None  # the metric's value, when a metric ran (compile, tune)

    REQUIRED = ("question_id", "method", "answer", "gold", "correct")

    @classmethod
    def of(cls, row: dict[str, Any]) -> ResultRow:
        names = {f.name for f in fields(cls)}
        found = cls(**{k: v for k, v in row.items() if k in names})
        if "fallbacks" not in row:  # rows written before fallbacks had kinds
            legacy = {"query": row.get("query_parse_failures"), "contrast": row.get("contrast_fallback")}
            found.fallbacks = {kind: value for kind, value in legacy.items() if value}
        return found

    @classmethod
    def check(cls, row: dict[str, Any]) -> None:
        """A row a writer is about to store must name every field readers rely on and no field they do not know."""
        unknown = set(row) - {f.name for f in fields(cls)}
        missing = [k for k in cls.REQUIRED if k not in row]
        if unknown or missing:
            raise ValueError(f"result row: unknown fields {sorted(unknown)}, missing {missing}")
