"""The questions a run answered (text, options, gold, fingerprint), kept in its own directory: the viewer, report
and merge read them there, so a run copied to another machine, or whose dataset file has moved, still shows what
it asked."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path

from hyporag.eval.packed import read_bytes, record_file
from hyporag.foundation.atomic import write_text_atomic

QUESTIONS = "questions.jsonl"


def read_questions(directory: str | Path) -> dict[str, dict]:
    """The run's questions by id ({} for a run from before the file); a damaged line is left out with a note on
    stderr, so one bad line costs its question's text, never the page."""
    path = record_file(directory, QUESTIONS)
    if not path.is_file():
        return {}
    found, damaged = {}, []
    for number, line in enumerate(read_bytes(path).decode("utf-8", errors="replace").splitlines(), start=1):
        try:
            record = json.loads(line)
            found[str(record["id"])] = {"question": str(record["question"]), "options": dict(record["options"]),
                                        "gold": record.get("gold"), "fingerprint": record.get("fingerprint"),
                                        **({"group": str(record["group"])} if record.get("group") else {})}
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            damaged.append(number)
    if damaged:
        print(f"{path}: line(s) {', '.join(map(str, damaged[:5]))} are not questions; left out", file=sys.stderr)
    return found


def write_questions(directory: str | Path, records: Iterable[dict]) -> None:
    """Add these questions to the run's file (a question asked again in a later version replaces its record)."""
    merged = read_questions(directory)
    for record in records:
        merged[str(record["id"])] = {k: v for k, v in record.items() if k != "id"}
    write_text_atomic(Path(directory) / QUESTIONS, "".join(
        json.dumps({"id": qid, **record}, ensure_ascii=False) + "\n" for qid, record in merged.items()))
