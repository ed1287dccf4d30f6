"""The results directory of one evaluation: a lock, the run's settings, and an append-only JSONL of finished rows.

Each finished (question, method) row is appended and fsync'ed on its own, so kill -9 loses at most the row being
written; on resume a torn last line is dropped and every complete row is kept, never recomputed.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hyporag.atomic import write_json_atomic, write_text_atomic
from hyporag.errors import HyporagError

ROWS = "results.jsonl"
SETTINGS = "run.json"
LOCK = ".lock"
OWNER = ".lock.owner"


def latest_rows(rows: Iterable[dict]) -> list[dict]:
    """The last row written for each (question, method): a retried row supersedes its failed attempt."""
    last: dict[tuple[str, str], dict] = {}
    for row in rows:
        last[(row["question_id"], row["method"])] = row
    return list(last.values())


def read_rows(path: Path) -> tuple[list[dict], int, bool]:
    """The complete rows of a results.jsonl, the bytes they span, and whether a torn line follows them.

    Read-only, so a report can be drawn while a run is still appending."""
    rows, good_bytes, torn = [], 0, False
    with path.open("rb") as handle:
        for raw in handle:
            try:
                rows.append(json.loads(raw))
                good_bytes += len(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                torn = True
                break
    return rows, good_bytes, torn


class ResultsStore:
    """Open with `with ResultsStore(dir, settings) as store:`; refuses a second live writer and changed settings."""

    def __init__(self, directory: str | Path, settings: dict[str, Any]):
        self.directory = Path(directory)
        self.settings = settings
        self._lock = threading.Lock()
        self._handle = None

    def __enter__(self) -> ResultsStore:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._acquire()
        try:
            self._check_settings()
            self.rows = self._load_rows()
            self._handle = (self.directory / ROWS).open("a", encoding="utf-8")
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._handle:
            self._handle.close()
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
            try:
                previous = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                previous = None
            keys = ("dataset", "lms", "adapters", "budget", "reasoning", "retriever", "index_fingerprint", "program")
            changed = [k for k in keys if previous is not None and previous.get(k) != self.settings.get(k)]
            if changed:
                raise HyporagError(f"{path}: this results dir holds a run with different {', '.join(changed)}; "
                                   "use another --out (rows from different settings must not mix)")
        write_json_atomic(path, self.settings)

    def _load_rows(self) -> list[dict]:
        path = self.directory / ROWS
        if not path.is_file():
            return []
        rows, good_bytes, torn = read_rows(path)
        if torn or (good_bytes and not path.read_bytes().endswith(b"\n")):
            with path.open("r+b") as handle:  # drop the torn tail a kill -9 left behind
                handle.truncate(good_bytes if torn else path.stat().st_size)
                if not torn:
                    handle.seek(0, os.SEEK_END)
                    handle.write(b"\n")
        return rows

    def done(self) -> set[tuple[str, str]]:
        """Pairs finished without an error: errored rows (rate limits, crashes) are retried by a re-run."""
        return {(r["question_id"], r["method"]) for r in self.latest() if not r.get("error")}

    def latest(self) -> list[dict]:
        return latest_rows(self.rows)

    def append(self, row: dict) -> None:
        line = json.dumps(row, ensure_ascii=False) + "\n"
        with self._lock:
            self._handle.write(line)
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self.rows.append(row)
