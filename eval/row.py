"""One result row: the record `hyporag eval` appends per (question, method), and what every reader may rely on.

Rows are JSON objects on disk (results.jsonl); this is their one definition. Readers use `ResultRow.of(dict)`
(attribute access, defaults for fields an older run did not write) instead of string keys of their own.
"""

from __future__ import annotations

import math
import sys
import types
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

from hyporag.eval.belief import MEASURES, rederived
from hyporag.eval.pulls import passage_pulls


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
    # the reader's log-probability per option letter at the letter's token of the answer call (lm.option_probs),
    # renormalised over the options; status ok / partial / none / unlocated / unparsed; the measures need ok
    option_logprobs: dict | None = None
    option_logprob_status: str | None = None
    log_p_gold: float | None = None
    p_gold: float | None = None
    margin: float | None = None  # log p_gold − the best other option's log p: > 0 exactly when gold is the argmax
    entropy: float | None = None
    fallbacks: dict = field(default_factory=dict)  # kind ("query", "contrast", ...) -> why, or how often
    details: dict = field(default_factory=dict)  # the program's own per-question fields (its row_fields)
    error: str | None = None
    passage_ids: list[str] = field(default_factory=list)
    passage_scores: list[float] = field(default_factory=list)  # each passage's retrieval score, in context order
    passage_found_by: list[list[int]] = field(default_factory=list)  # positions in `queries` that found each
    # per-passage answers (programs.per_passage): the closed-book reading (also the first answer of retrieval on
    # demand), each passage read alone, the mixture's weights (the prior first), each passage's pull (eval.pulls)
    closed_book: dict | None = None
    passage_readings: list[dict] = field(default_factory=list)
    mixture_weights: list[float] | None = None
    passage_pulls: list[dict | None] = field(default_factory=list)
    retrieved: bool | None = None  # retrieval on demand: whether this question retrieved (None: always retrieves)
    queries: list[str] = field(default_factory=list)
    hypothesis: dict | None = None
    hypothesis_option: str | None = None  # the option the hypothesis names (HCQR's letter; CHR's H+ by option text)
    retrieval_sees_options: bool | None = None
    calls: int = 0  # every LM call the question took, replies served from DSPy's cache included
    cache_hits: int = 0  # of those, served from the cache (not paid for by this run)
    malformed_replies: int = 0  # replies that arrived cut short (HTTP 200, not a reply) and were asked again
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
    rescored: bool = False  # its stored `correct` disagreed with answer against gold, and was recomputed
    # set by readers (eval.belief.rederived), never written: why the stored distribution is not one (its measures
    # are then None), and whether the stored measures disagreed with the distribution and were derived again
    damaged_distribution: str | None = None
    measures_rederived: bool = False
    pulls_rederived: bool = False  # its stored passage pulls disagreed with its own readings and were derived again

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


_TYPES = get_type_hints(ResultRow)


def fits_type(value: Any, kind: Any) -> bool:
    """Whether a stored value has the declared type (a count is a number, an id a string, `dict[str, str]` a table
    of strings, ...): what a reader checks before it trusts a value someone could have edited by hand."""
    origin = get_origin(kind)
    if origin in (Union, types.UnionType):
        return any(fits_type(value, k) for k in get_args(kind))
    if kind is type(None):
        return value is None
    if kind is Any:
        return True
    if origin is list:
        inner = get_args(kind)
        return isinstance(value, list) and (not inner or all(fits_type(v, inner[0]) for v in value))
    if origin is dict:
        key, item = get_args(kind) or (Any, Any)
        return isinstance(value, dict) and all(fits_type(k, key) and fits_type(v, item) for k, v in value.items())
    if kind is dict:
        return isinstance(value, dict)
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return isinstance(value, kind)


def row_problem(row: dict[str, Any]) -> str | None:
    """Why a stored row cannot be trusted as a row (a field of the wrong type: `calls` a string, an id a list), or
    None. Readers leave such a row out rather than draw or count it."""
    for name in ("question_id", "method"):
        if not isinstance(row.get(name), str):
            return f"field {name!r} is {row.get(name)!r}, not a string"
    if not isinstance(row.get("gold"), str) or not row["gold"].strip():  # nothing to score the answer against
        return f"field 'gold' is {row.get('gold')!r}, not an option letter"
    for name, value in row.items():
        kind = _TYPES.get(name)
        if kind is not None and not fits_type(value, kind):
            return f"field {name!r} is {value!r:.60}, not {getattr(kind, '__name__', None) or kind}"
    return None


def rescored(row: dict[str, Any]) -> dict[str, Any]:
    """The row with `correct` recomputed from its answer and gold, its belief measures derived again from its own
    option distribution (eval.belief), and each passage's pull derived again from the readings it came from
    (eval.pulls): a stored flag, measure or pull is never trusted on its own."""
    right = not row.get("error") and row.get("answer") is not None and row.get("answer") == row.get("gold")
    row = row if row.get("correct") is right else {**row, "correct": right, "rescored": True}
    derived = rederived(row)
    if derived is not row and any(derived.get(k) != row.get(k) for k in MEASURES) and \
            not derived.get("damaged_distribution"):
        derived["measures_rederived"] = True
    pulls = passage_pulls(derived.get("passage_readings") or [], derived.get("closed_book"), derived["gold"])
    if pulls != (derived.get("passage_pulls") or []):
        derived = {**derived, "passage_pulls": pulls, "pulls_rederived": bool(derived.get("passage_pulls"))}
    return derived


def say_distrusted(where: Path | str, rows: list[dict]) -> None:
    """One stderr line per kind of stored value a reader did not trust: a `correct` flag that disagrees with answer
    and gold, belief measures that disagree with the row's own distribution, a distribution that is not one."""
    rescored = sum(bool(r.get("rescored")) for r in rows)
    if rescored:
        print(f"{where}: {rescored} row(s) stored a `correct` flag that disagrees with their answer and gold; "
              "scored from answer and gold", file=sys.stderr)
    rederived = [r for r in rows if r.get("measures_rederived")]
    if rederived:
        print(f"{where}: {len(rederived)} row(s) stored belief measures (log p_gold, p_gold, margin, entropy) that "
              f"disagree with their own option distribution (first: {rederived[0]['method']} on "
              f"{rederived[0]['question_id']}); derived from the distribution", file=sys.stderr)
    repulled = [r for r in rows if r.get("pulls_rederived")]
    if repulled:
        print(f"{where}: {len(repulled)} row(s) stored passage pulls that disagree with their own readings (first: "
              f"{repulled[0]['method']} on {repulled[0]['question_id']}); derived from the readings", file=sys.stderr)
    damaged = [r for r in rows if r.get("damaged_distribution")]
    if damaged:
        print(f"{where}: {len(damaged)} row(s) hold an option distribution that is not one (first: "
              f"{damaged[0]['method']} on {damaged[0]['question_id']}: {damaged[0]['damaged_distribution']}); "
              "their belief measures are left out (counted as damaged)", file=sys.stderr)
