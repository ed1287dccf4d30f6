"""Parse multiple-choice questions from JSONL or CSV into `dspy.Example`s, with errors that name file and line.

This is how a user brings a new domain: any JSONL with `question`, `options` ({letter: text} or a list) and
`answer` (a letter), or a CSV with `question`, `A`..`E` and `answer` columns, loads like a built-in benchmark.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import string
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy

from hyporag.foundation.errors import DataError

LETTERS = string.ascii_uppercase


@dataclass
class LoadReport:
    """What a load read: the examples, where they came from, and the rows it skipped (with reasons)."""

    examples: list[dspy.Example]
    source: str
    skipped: list[str] = field(default_factory=list)
    locations: dict[str, str] = field(default_factory=dict)  # question id -> "file:line", for later refusals

    def where(self, example: dspy.Example) -> str:
        return self.locations.get(example.id, f"{self.source}: question {example.id}")

    @classmethod
    def join(cls, reports: list[LoadReport], separator: str = "; ") -> LoadReport:
        """Several loads as one; an id in two of them is refused (a row keyed by it would stand for both)."""
        first: dict[str, str] = {}
        for report in reports:
            for example in report.examples:
                if example.id in first:
                    raise DataError(f"{report.where(example)}: question id {example.id!r} is also {first[example.id]}; "
                                    "ids must be unique across joined datasets (give the rows an `id`, or rename "
                                    "one file: ids default to <file stem>-<line>)")
                first[example.id] = report.where(example)
        return cls([e for r in reports for e in r.examples], separator.join(r.source for r in reports),
                   [s for r in reports for s in r.skipped], {k: v for r in reports for k, v in r.locations.items()})


def make_example(question: str, options: dict[str, str], answer: str, qid: str, **extra: Any) -> dspy.Example:
    """The one shape every program consumes: question, options {letter: text}, gold letter, id."""
    return dspy.Example(question=question, options=options, answer=answer, id=qid, **extra).with_inputs(
        "question", "options"
    )


def question_fingerprint(example: dspy.Example) -> str:
    """What a stored answer was an answer to: question text, options and gold. Row ids are `<file stem>-<line>`, so
    a row is reusable only while its question is unchanged; an edited gold letter or a new question at the same
    line must be answered again, not reported from the old row."""
    body = json.dumps([example.question, dict(example.options), example.answer], ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]


def normalize_options(raw: Any) -> dict[str, str]:
    """Options as an ordered {letter: text} dict; a list becomes A, B, C, ...; raises ValueError when unusable."""
    if isinstance(raw, list):
        if len(raw) > len(LETTERS):
            raise ValueError(f"too many options ({len(raw)})")
        raw = dict(zip(LETTERS, raw, strict=False))
    if not isinstance(raw, dict):
        raise ValueError("field 'options' must be an object {letter: text} or a list")
    options: dict[str, str] = {}
    seen: dict[str, object] = {}
    for key, text in raw.items():
        letter = str(key).strip().upper()
        if len(letter) != 1 or letter not in LETTERS:
            raise ValueError(f"option key {key!r} is not a single letter")
        if letter in seen:  # 'A' and 'a' name one option: keeping either would silently drop the other
            raise ValueError(f"option letter {letter} appears twice ({seen[letter]!r} and {key!r})")
        seen[letter] = key
        if text is None or not str(text).strip():
            continue  # MMLU-style blank trailing options are absent options, not errors
        options[letter] = str(text).strip()
    if len(options) < 2:
        raise ValueError(f"field 'options' needs at least two non-empty options, got {len(options)}")
    return dict(sorted(options.items()))


def record_to_example(record: Any, default_id: str) -> dspy.Example:
    """Validate one record; raises ValueError with the offending field named."""
    if not isinstance(record, dict):
        raise ValueError("record is not a JSON object")
    question = record.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("field 'question' is missing or empty")
    if "options" not in record:
        raise ValueError("field 'options' is missing")
    options = normalize_options(record["options"])
    raw_answer = record.get("answer")
    answer = "" if raw_answer is None else str(raw_answer).strip().upper()
    if not answer:
        raise ValueError("field 'answer' is missing")
    if answer not in options:
        raise ValueError(f"field 'answer' is {answer!r}, not one of the options {''.join(options)}")
    qid = str(record.get("id") or default_id)
    extra = {k: record[k] for k in ("subject", "dataset", "meta_info", "group") if k in record}
    return make_example(question.strip(), options, answer, qid, **extra)


def examples_from_python(examples: Iterable[Any], source: str = "examples") -> LoadReport:
    """Questions given in Python (dspy.Examples or dicts with question, options, answer and an optional id),
    checked and normalised exactly as a file's rows are: a letter in any case, options as a list or a dict,
    one-line errors naming the example and the field."""
    if isinstance(examples, (str, bytes, dict)) or not isinstance(examples, Iterable):
        raise DataError(f"{source}: give a list of dspy.Example (or dicts) with question, options and answer, "
                        f"not {type(examples).__name__}")
    loaded: list[dspy.Example] = []
    locations: dict[str, str] = {}
    for number, given in enumerate(examples, start=1):
        where = f"{source}[{number - 1}]"
        if isinstance(given, dspy.Example):
            record = {k: given.get(k) for k in ("question", "options", "answer", "id", "subject") if k in given}
        elif isinstance(given, dict):
            record = given
        else:
            raise DataError(f"{where}: a {type(given).__name__}, not a dspy.Example or dict with question, options, "
                            "answer")
        try:
            example = record_to_example(record, default_id=f"{source}-{number}")
        except ValueError as exc:
            raise DataError(f"{where}: {exc}") from None
        if example.id in locations:
            raise DataError(f"{where}: duplicate id {example.id!r} (also {locations[example.id]})")
        locations[example.id] = where
        loaded.append(example)
    if not loaded:
        raise DataError(f"{source}: no questions given (an empty list)")
    return LoadReport(loaded, "examples given in Python", [], locations)


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json.loads keeps the last of two equal keys; a row with `"A"` twice would lose an option unseen."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


GZIP_MAGIC = b"\x1f\x8b"


def _refuse_compressed(path: Path) -> None:
    """A gzipped file decodes as garbage; saying "not UTF-8" would send the user looking for an encoding problem."""
    with path.open("rb") as handle:
        if handle.read(2) == GZIP_MAGIC:
            raise DataError(f"{path}: gzip-compressed; decompress it first (gunzip -k {path.name})")


def _rows_from_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a UTF-8 byte-order mark, as Windows editors write
            if not raw.strip():
                continue
            try:
                yield number, json.loads(raw.decode("utf-8"), object_pairs_hook=_refuse_duplicate_keys)
            except UnicodeDecodeError as exc:
                yield number, ValueError(f"not UTF-8 ({exc.reason})")
            except json.JSONDecodeError as exc:
                yield number, ValueError(f"not JSON ({exc.msg})")
            except ValueError as exc:  # a duplicate key
                yield number, exc


def _csv_text(path: Path) -> str:
    """The CSV's text: UTF-8 with or without Excel's byte-order mark ("CSV UTF-8"); other bytes name their line."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataError(f"{path}:{line}: not UTF-8 ({exc.reason} at byte {exc.start}); save the file as UTF-8 "
                        "(Excel: \"CSV UTF-8\")") from None


def _rows_from_csv(path: Path) -> Iterator[tuple[int, Any]]:
    with io.StringIO(_csv_text(path), newline="") as handle:
        reader = csv.DictReader(handle)
        columns = [c.strip() for c in reader.fieldnames or []]
        folded = [c.upper() if len(c) == 1 else c for c in columns]
        twice = sorted({c for c in folded if folded.count(c) > 1})
        if twice:
            raise DataError(f"{path}:1: CSV column(s) {', '.join(twice)} appear twice (letters are case-folded)")
        missing = [c for c in ("question", "A", "B", "answer") if c not in columns]
        if missing:
            raise DataError(f"{path}:1: CSV is missing column(s) {', '.join(missing)} (need question, A.., answer)")
        letters = [c for c in columns if len(c) == 1 and c in LETTERS]
        for row in reader:
            row = {k.strip(): v for k, v in row.items() if k}
            record = {"question": row.get("question"), "answer": row.get("answer"), "id": row.get("id")}
            record["options"] = {letter: row.get(letter) for letter in letters}
            yield reader.line_num, record


def load_records(path: str | Path, skip_bad_rows: bool = False, source: str | None = None) -> LoadReport:
    """Load a user or built-in question file; fails on the first bad row unless `skip_bad_rows`."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: dataset file not found")
    _refuse_compressed(path)
    rows: Iterable[tuple[int, Any]] = _rows_from_csv(path) if path.suffix.lower() == ".csv" else _rows_from_jsonl(path)
    examples: list[dspy.Example] = []
    skipped: list[str] = []
    seen: dict[str, int] = {}
    locations: dict[str, str] = {}
    for number, record in rows:
        try:
            if isinstance(record, Exception):
                raise record
            example = record_to_example(record, default_id=f"{path.stem}-{number}")
            if example.id in seen:
                raise ValueError(f"duplicate id {example.id!r} (first on line {seen[example.id]})")
        except ValueError as exc:
            message = f"{path}:{number}: {exc}"
            if not skip_bad_rows:
                raise DataError(message + " (use --skip-bad-rows to skip such rows)") from None
            skipped.append(message)
            continue
        seen[example.id] = number
        examples.append(example)
        locations[example.id] = f"{path}:{number}"
    if not examples:
        note = f" ({len(skipped)} bad rows skipped)" if skipped else ""
        raise DataError(f"{path}: no usable questions in file{note}")
    return LoadReport(examples, source or str(path), skipped, locations)
