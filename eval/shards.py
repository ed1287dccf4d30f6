"""Sharded runs: a deterministic 1/N of a run's questions per machine, and the shards merged back into one run.

A shard takes every N-th question of the run's seeded list (after `--limit`), with every method, so methods stay
paired on the same questions. Its run.json records the shard and a hash of the whole list; `merge_runs` refuses
shards of different settings, code versions or question lists, and writes one results directory whose rows and
report are those an unsharded run would have written.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyporag.eval.results_store import ROWS, SETTINGS, ResultsStore, read_run_settings
from hyporag.eval.run_questions import read_questions, write_questions
from hyporag.eval.run_report import current_rows, report_from_dir
from hyporag.eval.viewer import write_view
from hyporag.foundation.atomic import write_text_atomic
from hyporag.foundation.errors import ConfigError, HyporagError
from hyporag.questions.records import question_fingerprint

# run.json keys that may differ between shards of one run: where each machine keeps its files, and what is per shard
PER_SHARD = {"shard", "n", "question_fingerprints", "dataset_source", "index_dir", "skipped_too_long", "context_check",
             "endpoints"}
# of `sequential`: where each shard's own `--until-decided` run stopped, and why (shards stop at different questions)
PER_SHARD_STOP = {"stopped_at", "reason", "at_stop", "plan"}
MACHINE_LOCAL = {"endpoint", "path", "mtime_ns", "model_path", "speculative"}  # of an LM identity: the same weights
# elsewhere, or decoded by an allowed speculative mode (the same replies; inexact modes are refused)


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count` (1-based), parsed from "I/N"."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str, source: str = "--shard") -> Shard:
        try:
            index, count = (int(part) for part in str(text).split("/"))
        except ValueError:
            raise ConfigError(f"{source}: {text!r} is not I/N (e.g. 2/3: the second of three shards)") from None
        if not 1 <= index <= count:
            raise ConfigError(f"{source}: {text!r}: the shard number must be from 1 to {max(count, 1)}")
        return cls(index, count)

    def take(self, questions: Sequence) -> list:
        """Every count-th question from position index − 1: shards of one list are disjoint and cover it."""
        return list(questions[self.index - 1::self.count])

    def record(self, questions: Sequence) -> dict[str, Any]:
        """What run.json keeps so shards can be checked against each other: the shard and the list it came from."""
        return {"index": self.index, "count": self.count, "questions_total": len(questions),
                "question_list": question_list_hash(questions)}

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def question_list_hash(questions: Sequence) -> str:
    """The seeded question list by ids and content (text, options, gold), in order: equal only for shards cut from
    the same list of the same questions (two versions of one dataset file share ids, not questions)."""
    keys = "\n".join(f"{q.get('id')}\t{question_fingerprint(q)}" if hasattr(q, "get") else str(q) for q in questions)
    return hashlib.sha256(keys.encode()).hexdigest()[:16]


def _read_run(directory: Path) -> tuple[dict, list[dict]]:
    settings_path = directory / SETTINGS
    if not settings_path.is_file() or not (directory / ROWS).is_file():
        raise HyporagError(f"{directory}: not a results directory of `hyporag eval` (no {SETTINGS} or {ROWS})")
    settings = read_run_settings(directory)
    if not settings.get("shard"):
        raise HyporagError(f"{settings_path}: not a shard (run with --shard I/N); only shards are merged")

    return settings, current_rows(directory)[1]


def _check_shards(runs: list[tuple[Path, dict, list[dict]]]) -> None:
    """One line naming the first shard that does not belong with the first one, or the shards that are missing."""
    first_dir, first, _ = runs[0]
    shared = {k: v for k, v in first.items() if k not in PER_SHARD}
    seen: dict[int, Path] = {}
    for directory, settings, _ in runs:
        shard = settings["shard"]
        for key in sorted(set(shared) | {k for k in settings if k not in PER_SHARD}):
            mine, theirs = _comparable(key, settings.get(key)), _comparable(key, shared.get(key))
            if mine != theirs:
                what = "code version" if key == "code_version" else f"setting {key!r}"
                raise HyporagError(f"{directory}: its {what} differs from {first_dir}'s ({_difference(mine, theirs)})"
                                   "; shards of one run only")
        for key, what in (("count", "shard count"), ("question_list", "question list"),
                          ("questions_total", "question count")):
            if shard[key] != first["shard"][key]:
                raise HyporagError(f"{directory}: its {what} differs from {first_dir}'s; these are shards of "
                                   "different runs")
        if shard["index"] in seen:
            raise HyporagError(f"{directory}: shard {shard['index']}/{shard['count']} given twice (also "
                               f"{seen[shard['index']]})")
        seen[shard["index"]] = directory
    answered: dict[str, tuple[str, Path]] = {}  # a question two shards both answered must be the same question
    for directory, settings, _ in runs:
        for question, fingerprint in (settings.get("question_fingerprints") or {}).items():
            other = answered.setdefault(question, (fingerprint, directory))
            if other[0] != fingerprint:
                raise HyporagError(f"{directory}: question {question!r} is not the one {other[1]} answered (its text, "
                                   "options or gold differ); these shards were cut from different versions of the "
                                   "dataset")
    count = first["shard"]["count"]
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in seen]
    if missing:
        raise HyporagError(f"shard(s) {', '.join(missing)} missing: give every shard's directory")


def _comparable(key: str, value: Any) -> Any:
    """A setting as shards must agree on it: an LM's identity without where it lives on each machine; a deciding
    rule without where each shard stopped."""
    if key == "sequential" and isinstance(value, dict):
        return {k: v for k, v in value.items() if k not in PER_SHARD_STOP}
    if key != "lm_identities" or not isinstance(value, dict):
        return value
    return {role: {k: v for k, v in (identity or {}).items() if k not in MACHINE_LOCAL}
            for role, identity in value.items()}


def _difference(mine: Any, theirs: Any, path: str = "") -> str:
    """The first place two settings differ, as `key: this against that` (a whole dict is not a message)."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        for key in sorted(mine.keys() | theirs.keys(), key=str):
            if mine.get(key) != theirs.get(key):
                return _difference(mine.get(key), theirs.get(key), f"{path}{key}.")
    where = f"{path.rstrip('.')}: " if path else ""
    return f"{where}{mine!r:.80} against {theirs!r:.80}"


def _interleaved(by_index: dict[int, list[str]]) -> list[str]:
    """Question ids back in the unsharded order: shard i holds positions i − 1, i − 1 + N, ..."""
    order, count = [], len(by_index)
    longest = max(len(ids) for ids in by_index.values())
    for position in range(longest):
        for index in range(1, count + 1):
            if position < len(by_index[index]):
                order.append(by_index[index][position])
    return order


def _earlier_merge(out: Path) -> bool:
    try:
        return "merged_from" in read_run_settings(out)
    except (OSError, HyporagError):
        return False


def _swap_in(staging: Path, out: Path) -> None:
    """Put the finished merge at `out` by renames: an earlier merge there is kept until the new one is in place."""
    if not out.exists():
        staging.rename(out)
        return
    retired = out.with_name(f".{out.name}.replaced-{os.getpid()}")
    out.rename(retired)
    try:
        staging.rename(out)
    except OSError:
        retired.rename(out)
        raise
    shutil.rmtree(retired, ignore_errors=True)


def merge_runs(directories: Sequence[str | Path], out: str | Path) -> dict:
    """Merge every shard of one run into `out` (rows in the unsharded order, run.json without the shard, the
    report and page redrawn) and return the report. `out` may be new or an earlier merge, never another run."""

    if not directories:
        raise ConfigError("merge: give the shards' results directories")
    out = Path(out)
    runs = [(Path(d), *_read_run(Path(d))) for d in directories]
    if any(out.resolve() == d.resolve() for d, _, _ in runs):
        raise ConfigError(f"{out}: is one of the shards; merge into another directory")
    replaces = out.exists() and (not out.is_dir() or any(out.iterdir()))
    if replaces and not _earlier_merge(out):
        raise HyporagError(f"{out}: exists and is not an earlier merge; give a new --out (nothing overwritten)")
    _check_shards(runs)  # everything is checked before anything is written: a refused merge leaves `out` as it was
    runs.sort(key=lambda run: run[1]["shard"]["index"])
    fingerprints = {i: s["question_fingerprints"] for _, s, _ in runs for i in [s["shard"]["index"]]}
    order = _interleaved({i: list(f) for i, f in fingerprints.items()})
    all_fingerprints = {q: f[q] for f in fingerprints.values() for q in f}
    first = runs[0][1]
    methods = list(first.get("methods") or [])
    settings = {k: v for k, v in first.items() if k not in PER_SHARD}
    stops = {str(d): {k: v for k, v in s["sequential"].items() if k in PER_SHARD_STOP}
             for d, s, _ in runs if isinstance(s.get("sequential"), dict) and "stopped_at" in s["sequential"]}
    if stops:  # each shard's own stop, kept per shard; the merged run is read on the questions all of them asked
        settings["sequential"] = {**_comparable("sequential", settings["sequential"]), "shard_stops": stops}
    settings.update(n=sum(s["n"] for _, s, _ in runs), question_fingerprints={q: all_fingerprints[q] for q in order},
                    skipped_too_long=sum(s.get("skipped_too_long") or 0 for _, s, _ in runs),
                    merged_from=[str(d) for d, _, _ in runs], shards=first["shard"]["count"])
    served = {str(d): s["endpoints"] for d, s, _ in runs if s.get("endpoints")}
    if served:  # each machine's own servers: kept per shard
        settings["shard_endpoints"] = served
    contexts = list(dict.fromkeys(s.get("context_check") for _, s, _ in runs))
    settings["context_check"] = contexts[0] if len(contexts) == 1 else contexts
    position = {q: i for i, q in enumerate(order)}
    rank = {m: i for i, m in enumerate(methods)}
    rows = sorted((r for _, _, shard_rows in runs for r in shard_rows),
                  key=lambda r: (position.get(r["question_id"], len(position)), rank.get(r["method"], len(rank))))
    staging = out.with_name(f".{out.name}.merging-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        with ResultsStore(staging, settings):
            write_text_atomic(staging / ROWS, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
            kept = {q: record for d, _, _ in runs for q, record in read_questions(d).items()}
            if kept:  # each shard's own questions, in the unsharded order
                write_questions(staging, ({"id": q, **kept[q]} for q in order if q in kept))
        _swap_in(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    report = report_from_dir(out)
    report["view"] = str(write_view([out]))
    return report
