"""The fields of run.json that readers trust, with their types: a hand-edited or damaged record is refused in one line
naming the field, never read wrongly (a `methods` string read as one method per character, an `n` of NaN, a seed
that is a list).

A field not named here is kept as it is and read by nobody as a number or a list; a field named here may be absent
(runs recorded before it existed), but when present it must have its type.
"""

from __future__ import annotations

import math
from typing import Any

from hyporag.eval.row import fits_type

Number = int | float
# name -> (declared type, a rule on the value or None); the rule returns why a well-typed value is still refused
RUN_FIELDS: dict[str, tuple[Any, Any]] = {
    "schema": (int, None),
    "dataset": (str | None, None),
    "dataset_source": (str | None, None),
    "n": (int, lambda v: None if v >= 0 else "a negative count"),
    "seed": (int, None),
    "methods": (list[str], lambda v: None if all(m.strip() for m in v) else "an empty method name"),
    "baseline": (str | None, None),
    "question_fingerprints": (dict[str, str], None),
    "order": (list[str], None),
    "program": (dict[str, dict], None),
    "effective": (dict[str, dict], None),
    "budget": (int | dict | None, None),
    "reasoning": (bool | dict | None, None),
    "lms": (dict | None, None),
    "lm_identities": (dict | None, None),
    "adapters": (dict | None, None),
    "retriever": (str | None, None),
    "index_fingerprint": (str | None, None),
    "index_dir": (str | None, None),
    "bm25_engine": (str | None, None),
    "bm25_search": (str | None, None),
    "dur": (bool | None, None),
    "skipped_too_long": (int, None),
    "endpoints": (dict, None),
    "shard": (dict | None, None),
    "merged_from": (list[str], None),
    "sequential": (dict | None, None),
}
# run.json's `sequential`: the deciding rule a run recorded and where it stopped
SEQUENTIAL_FIELDS: dict[str, tuple[Any, Any]] = {
    "alpha": (Number, lambda v: None if 0 < v < 1 else "not between 0 and 1"),
    "deltas": (dict[str, Number], None),
    "until_decided": (bool, None),
    "max_questions": (int | None, None),
    "stopped_at": (int | None, None),
    "reason": (str, None),
    "decide_on": (str | None, None),
}
SHARD_FIELDS: dict[str, tuple[Any, Any]] = {"index": (int, None), "count": (int, None),
                                            "questions_total": (int, None), "question_list": (str, None)}


def _problem(record: dict[str, Any], declared: dict[str, tuple[Any, Any]], prefix: str = "") -> str | None:
    for name, (kind, rule) in declared.items():
        if name not in record:
            continue
        value = record[name]
        if isinstance(value, float) and not math.isfinite(value):
            return f"field '{prefix}{name}' is {value!r}, not a finite number"
        if not fits_type(value, kind):
            return f"field '{prefix}{name}' is {value!r:.80}, not {_described(kind)}"
        problem = rule(value) if rule is not None and value is not None else None
        if problem:
            return f"field '{prefix}{name}' is {value!r:.80}: {problem}"
    return None


def _described(kind: Any) -> str:
    names = {int: "a whole number", str: "a string", bool: "true or false", dict: "an object",
             list[str]: "a list of strings", dict[str, str]: "an object of strings",
             dict[str, dict]: "an object of objects", Number: "a number", dict[str, Number]: "an object of numbers"}
    return names.get(kind, str(kind).replace("typing.", "").replace(" | None", " or null"))


def run_settings_problem(settings: dict[str, Any]) -> str | None:
    """Why a run record cannot be trusted as one (a field of the wrong type or value), or None."""
    problem = _problem(settings, RUN_FIELDS)
    if problem is None and isinstance(settings.get("sequential"), dict):
        problem = _problem(settings["sequential"], SEQUENTIAL_FIELDS, "sequential.")
    if problem is None and isinstance(settings.get("shard"), dict):
        problem = _problem(settings["shard"], SHARD_FIELDS, "shard.")
    return problem
