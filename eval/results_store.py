"""The results directory of one evaluation: a lock, the run's settings, and an append-only JSONL of finished rows.

Each finished (question, method) row is appended and fsync'ed on its own, so kill -9 loses at most the row being
written; on resume a torn or undecodable line is dropped (and kept aside in `results.jsonl.dropped`), and every
intact row is kept, never recomputed, unless the question it answered has changed since (its fingerprint).
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hyporag.eval.packed import SUFFIX, is_packed, read_bytes, record_file
from hyporag.eval.row import rescored, row_problem
from hyporag.eval.run_compat import (  # noqa: F401 (differing_settings: exported through hyporag.eval)
    RETRIEVAL_KEYS,
    _brief,
    _deciding,
    _other_model,
    _unreported_pool,
    differing_settings,
    with_earlier_methods,
)
from hyporag.eval.run_fields import run_settings_problem
from hyporag.foundation.atomic import raise_if_disk_full, write_json_atomic, write_text_atomic
from hyporag.foundation.errors import HyporagError

ROWS = "results.jsonl"
DROPPED = "results.jsonl.dropped"
SETTINGS = "run.json"
LOCK = ".lock"
OWNER = ".lock.owner"
RUN_SCHEMA = 2  # run.json's layout (1: before this field, read alike); a newer one is refused, never misread
STOP_KEYS = ("stopped_at", "reason", "at_stop")  # run.json's account of where a deciding session stopped


def read_run_settings(directory: str | Path) -> dict[str, Any]:
    """A run directory's run.json, the one way every reader (report, view, merge, resume, tracking) loads it: one
    line naming the file when it is missing, not JSON, not an object, or written by a newer hyporag."""
    path = record_file(directory, SETTINGS)
    if not path.is_file():
        raise HyporagError(f"{path}: not found; is {Path(directory)} a results directory of `hyporag eval`?")
    try:
        settings = json.loads(read_bytes(path).decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HyporagError(f"{path}: not valid JSON ({getattr(exc, 'lineno', None) and f'line {exc.lineno}' or exc})"
                           ) from None
    if not isinstance(settings, dict):
        raise HyporagError(f"{path}: not a run record (a JSON object)")
    schema = settings.get("schema", 1)
    if isinstance(schema, int) and not isinstance(schema, bool) and schema > RUN_SCHEMA:
        raise HyporagError(f"{path}: run schema {schema!r} is newer than this hyporag reads ({RUN_SCHEMA}); upgrade "
                           "hyporag to read it")
    problem = run_settings_problem(settings)
    if problem:
        raise HyporagError(f"{path}: {problem}; this record was edited or damaged (re-run into a new --out)")
    return settings


def latest_rows(rows: Iterable[dict]) -> list[dict]:
    """The last row written for each (question, method): a retried row supersedes its failed attempt."""
    last: dict[tuple[str, str], dict] = {}
    for row in rows:
        last[(row["question_id"], row["method"])] = row
    return list(last.values())


def read_results(path: str | Path) -> list[dict]:
    """The current row of each (question, method) in a run directory or its results.jsonl, damaged lines left out:
    what a table over someone's run should read, even while the run is still appending."""
    path = Path(path)
    path = record_file(path, ROWS) if path.is_dir() else path
    if not path.is_file():
        raise HyporagError(f"{path}: no results here (a run directory holds {ROWS})")
    return latest_rows(read_rows(path)[0])


def read_rows(path: Path) -> tuple[list[dict], list[tuple[int, bytes]]]:
    """Every intact row of a results.jsonl, and the lines that are not one (line number, bytes): a torn last
    line after kill -9, or a damaged line anywhere. Read-only, so a report can be drawn while a run appends."""
    rows, bad = [], []
    with (gzip.open(path, "rb") if path.suffix == SUFFIX else path.open("rb")) as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                row = None
            if isinstance(row, dict) and "question_id" in row and "method" in row and row_problem(row) is None:
                rows.append(rescored(row))  # `correct` from answer and gold: a hand-edited flag does not count
            else:
                bad.append((number, raw))
    return rows, bad


class ResultsStore:
    """Open with `with ResultsStore(dir, settings) as store:`; refuses a second live writer and changed settings."""

    def __init__(self, directory: str | Path, settings: dict[str, Any]):
        self.directory = Path(directory)
        self.settings = {**settings, "schema": RUN_SCHEMA}
        self.previous: dict[str, Any] | None = None  # run.json as an earlier session left it (None: a new run)
        self._lock = threading.Lock()
        self._handle = None
        self.dropped: list[int] = []

    def __enter__(self) -> ResultsStore:
        if self.directory.exists() and not self.directory.is_dir():
            raise HyporagError(f"{self.directory}: is a file, not a results directory; give --out a directory")
        if is_packed(self.directory):
            raise HyporagError(f"{self.directory}: is a packed run (read-only, committed evidence); unpack it into a "
                               "new --out to resume it (bench/rows.py unpack)")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._acquire()
        except OSError as exc:  # a read-only or someone else's --out: one line before any LM call
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            raise HyporagError(f"{exc.filename or self.directory}: cannot write here ({exc.strerror or exc}); give "
                               "--out a directory you can write") from None
        try:
            self._check_settings()
            self.rows = self._load_rows()
            self._handle = (self.directory / ROWS).open("a", encoding="utf-8")
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._handle:
                self._handle.close()
        except OSError as error:  # a full disk fails the close's flush too: the lock is released all the same
            raise_if_disk_full(error, self.directory / ROWS)
            raise
        finally:
            self._release()

    def _acquire(self) -> None:
        """An OS file lock (flock): the kernel releases it when its process dies, so there is no stale lock to
        take over, and two runs starting at once cannot both win."""
        from filelock import FileLock, Timeout

        self._file_lock = FileLock(self.directory / LOCK, timeout=0, preserve_lock_file=True)
        try:
            self._file_lock.acquire()
        except Timeout:
            owner = (self.directory / OWNER).read_text().strip() if (self.directory / OWNER).is_file() else "?"
            raise HyporagError(f"{self.directory}: another evaluation (pid {owner}) is writing here; "
                               "wait for it or use another --out") from None
        write_text_atomic(self.directory / OWNER, str(os.getpid()))

    def _release(self) -> None:
        (self.directory / OWNER).unlink(missing_ok=True)
        self._file_lock.release()

    def _check_settings(self) -> None:
        path = self.directory / SETTINGS
        if path.is_file():
            # a record that cannot be read (damaged, hand-edited, a newer hyporag's) is never rewritten: its rows
            # could not be checked against this run's settings
            previous = self.previous = read_run_settings(self.directory)
            # the seed orders the questions: a deciding run resumed under another seed would re-read its old rows
            # in a new order and could stop "decided" without asking a question
            keys = ("dataset", "seed", "lms", "adapters", "budget", "reasoning", "retriever", "index_fingerprint",
                    "bm25_engine", "bm25_search")
            if "bm25_engine" not in previous and "bm25_engine" in self.settings:
                previous["bm25_engine"] = "bm25s"  # runs from before the field searched bm25s's BM25, or none
                if self.settings["bm25_engine"] is None:
                    previous["bm25_engine"] = None
            if "bm25_search" not in previous and "bm25_search" in self.settings:
                previous["bm25_search"] = "exact" if previous.get("bm25_engine") else None  # before two-stage
            # a run whose methods read no passages (cot alone) has no retriever: another run may add methods that do
            unindexed = None in (previous.get("retriever"), self.settings.get("retriever"))
            changed = [k for k in keys if previous.get(k) != self.settings.get(k)
                       and not (unindexed and k in RETRIEVAL_KEYS)]
            before, now = previous.get("lm_identities"), self.settings.get("lm_identities")
            # a pool none of whose servers answers reports nothing to compare: its first call fails the run instead
            differs = [r for r in ("answer", *(now or {})) if _other_model((before or {}).get(r), (now or {}).get(r))]
            if not changed and before and now and differs:
                role = differs[0]
                raise HyporagError(f"{path}: the {role} model is not the one this run used ({_brief(before.get(role))} "
                                   f"then, {_brief(now.get(role))} now: same name, other weights or endpoint); use "
                                   "another --out (its rows and cached replies are another model's)")
            rule = [k for k in ("alpha", "decide_on", "deltas") if _deciding(previous) and _deciding(self.settings)
                    and (previous["sequential"].get(k) or None) != (self.settings["sequential"].get(k) or None)]
            if rule:  # a deciding run's rows were read under its rule: another rule would re-read them
                raise HyporagError(f"{path}: this deciding run stops by another rule ({', '.join(rule)}: "
                                   + "; ".join(f"{previous['sequential'].get(k)!r} then, "
                                               f"{self.settings['sequential'].get(k)!r} now" for k in rule)
                                   + "); use another --out, or resume with the rule it began with")
            if changed:
                raise HyporagError(f"{path}: this results dir holds a run with different {', '.join(changed)} ("
                                   + "; ".join(f"{k} {previous.get(k)!r:.60} then, {self.settings.get(k)!r:.60} now"
                                               for k in changed[:2])
                                   + "); use another --out (rows from different settings must not mix)")
            self.settings = with_earlier_methods(path, previous, self.settings)
            stop = {k: v for k, v in (previous.get("sequential") or {}).items() if k in STOP_KEYS}
            if stop and not _deciding(self.settings):  # where an earlier deciding session stopped stays on record
                self.settings["sequential"] = {**(self.settings.get("sequential") or {}), **stop}
            if before and now:  # what a pool reported before stays recorded while none of its servers answers
                kept = {r: before[r] for r in now if _unreported_pool(now[r]) and before.get(r)}
                if kept:
                    self.settings = {**self.settings, "lm_identities": {**now, **kept}}
        try:
            write_json_atomic(path, self.settings)
        except OSError as exc:
            raise_if_disk_full(exc, path)
            raise

    def _load_rows(self) -> list[dict]:
        """The intact rows; damaged lines are copied to results.jsonl.dropped and the file rewritten without them
        (atomically), so one bad line never costs the rows after it."""
        path = self.directory / ROWS
        if not path.is_file():
            return []
        rows, bad = read_rows(path)
        if bad:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            with (self.directory / DROPPED).open("ab") as handle:
                for number, raw in bad:
                    handle.write(f"# {stamp} line {number}\n".encode() + raw.rstrip(b"\n") + b"\n")
            write_text_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
            self.dropped = [number for number, _ in bad]
            print(f"{path}:{self.dropped[0]}: damaged line dropped ({len(bad)} in all, lines "
                  f"{', '.join(map(str, self.dropped[:5]))}{'...' if len(bad) > 5 else ''}); kept "
                  f"{len(rows)} intact rows; the dropped bytes are in {self.directory / DROPPED}", file=sys.stderr)
        elif path.stat().st_size and not path.read_bytes().endswith(b"\n"):
            with path.open("ab") as handle:  # a complete last row without its newline: the next append needs one
                handle.write(b"\n")
        return rows

    def update(self, changes: dict[str, Any]) -> None:
        """Change run.json's record while the run holds its lock (where it stopped, what each endpoint served): the
        store is run.json's one writer."""
        if not changes:
            return
        self.settings = {**self.settings, **changes}
        try:
            write_json_atomic(self.directory / SETTINGS, self.settings)
        except OSError as exc:
            raise_if_disk_full(exc, self.directory / SETTINGS)
            raise

    def done(self, fingerprints: dict[str, str] | None = None) -> set[tuple[str, str]]:
        """Pairs finished without an error (errored rows are retried by a re-run) and, given the current questions'
        `fingerprints`, for the same question: a row for an edited question is recomputed."""
        return {(r["question_id"], r["method"]) for r in self.latest() if not r.get("error")
                and (fingerprints is None or r.get("question_fingerprint") == fingerprints.get(r["question_id"]))}

    def latest(self) -> list[dict]:
        return latest_rows(self.rows)

    def append(self, row: dict) -> None:
        line = json.dumps(row, ensure_ascii=False) + "\n"
        with self._lock:
            try:
                self._handle.write(line)
                self._handle.flush()
                os.fsync(self._handle.fileno())
            except OSError as exc:
                raise_if_disk_full(exc, self.directory / ROWS)
                raise
            self.rows.append(row)
