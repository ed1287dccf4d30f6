"""Passage text stored once in SQLite and looked up by row: queries never re-read the corpus files."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from hyporag.foundation.errors import DataError
from hyporag.retrieval.corpus import Passage


class PassageStore:
    """Row-numbered passages (row = position in the index); thread-safe reads through one connection."""

    FILENAME = "passages.sqlite"

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        self._lock = threading.Lock()
        self._longest: dict[int, list[Passage]] = {}
        self.count = self._conn.execute("SELECT COUNT(*) FROM passages").fetchone()[0]

    @staticmethod
    def build(path: str | Path, passages: Iterable[Passage]) -> int:
        """Write all passages to a new database at `path`; returns the count."""
        path = Path(path)
        path.unlink(missing_ok=True)
        conn = sqlite3.connect(path)
        try:
            conn.execute("CREATE TABLE passages (row INTEGER PRIMARY KEY, pid TEXT UNIQUE, title TEXT, contents TEXT)")
            count = 0
            batch: list[tuple] = []
            for passage in passages:
                batch.append((count, passage.id, passage.title, passage.contents))
                count += 1
                if len(batch) >= 5000:
                    conn.executemany("INSERT INTO passages VALUES (?, ?, ?, ?)", batch)
                    batch.clear()
            conn.executemany("INSERT INTO passages VALUES (?, ?, ?, ?)", batch)
            conn.commit()
        except sqlite3.IntegrityError:
            raise DataError(f"{path.name}: two passages share an id after long ones were split into <id>#<n> parts "
                            "(an id of that form is already in the corpus); rename it") from None
        finally:
            conn.close()
        return count

    def get(self, rows: Sequence[int]) -> list[Passage]:
        """Passages for these rows, in the given order."""
        if not rows:
            return []
        unique = sorted(set(int(r) for r in rows))
        marks = ",".join("?" * len(unique))
        with self._lock:
            found = {
                row: Passage(pid, title, contents)
                for row, pid, title, contents in self._conn.execute(
                    f"SELECT row, pid, title, contents FROM passages WHERE row IN ({marks})", unique
                )
            }
        return [found[int(r)] for r in rows]

    def by_ids(self, ids: Sequence[str]) -> dict[str, Passage]:
        """Passages by id (those the store holds): what a viewer of a run's retrieved ids needs."""
        wanted = sorted(set(ids))
        found: dict[str, Passage] = {}
        with self._lock:
            for start in range(0, len(wanted), 900):  # SQLite's bound-parameter limit
                chunk = wanted[start:start + 900]
                query = f"SELECT pid, title, contents FROM passages WHERE pid IN ({','.join('?' * len(chunk))})"
                found.update({pid: Passage(pid, title, contents) for pid, title, contents in
                              self._conn.execute(query, chunk)})
        return found

    def longest(self, count: int) -> list[Passage]:
        """The `count` longest passages: the largest context a budget of `count` can put in a prompt. One scan of
        the store per count, remembered (the store is read-only), however many programs ask."""
        with self._lock:
            if count not in self._longest:
                rows = self._conn.execute("SELECT pid, title, contents FROM passages ORDER BY "
                                          "LENGTH(title) + LENGTH(contents) DESC LIMIT ?", (count,)).fetchall()
                self._longest[count] = [Passage(*row) for row in rows]
            return list(self._longest[count])

    def texts(self, batch_size: int = 2048) -> Iterable[list[str]]:
        """All passage texts in row order, in batches (what BM25 indexes)."""
        for batch in self.pairs(batch_size):
            yield [passage_text(title, contents) for title, contents in batch]

    def ids(self) -> Iterable[str]:
        """Passage ids in row order."""
        conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            yield from (pid for (pid,) in conn.execute("SELECT pid FROM passages ORDER BY row"))
        finally:
            conn.close()

    def pairs(self, batch_size: int = 2048) -> Iterable[list[tuple[str, str]]]:
        """All (title, contents) in row order, in batches: an encoder decides how to join them (MedCPT pairs them)."""
        conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            cursor = conn.execute("SELECT title, contents FROM passages ORDER BY row")
            while batch := cursor.fetchmany(batch_size):
                yield [(title, contents) for title, contents in batch]
        finally:
            conn.close()

    def close(self) -> None:
        self._conn.close()


def passage_text(title: str, contents: str) -> str:
    """What is indexed: MedRAG indexes `title. contents` for BM25 and embeddings alike."""
    return f"{title}. {contents}" if title else contents
