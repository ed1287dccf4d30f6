"""A folder of passage-vector shards being written by `hyporag embed`: the layout `index build --vectors` reads.

Shard i holds the passages [i·size, (i+1)·size) of the corpus as the index stores them (long passages already
split into `<id>#n`), as `shard-iiiii.npy` with `shard-iiiii.ids.json` beside it. `embed.json` records what made
the shards (corpus fingerprint, encoder spec, shard size, passage split): a re-run with the same settings skips
every finished shard, and a folder made with other settings is refused rather than mixed into or overwritten.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hyporag.foundation.atomic import raise_if_disk_full, write_json_atomic
from hyporag.foundation.errors import IndexMismatchError
from hyporag.retrieval.corpus import Passage

IDENTITY_FILE = "embed.json"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class PendingShard:
    """One shard still to encode: its number, first row and passages (in corpus order)."""

    number: int
    start: int
    passages: list[Passage]

    @property
    def ids(self) -> list[str]:
        return [p.id for p in self.passages]


class VectorShards:
    """The output folder: its identity, which shards are done, and the atomic write of one shard."""

    def __init__(self, directory: str | Path, identity: dict[str, Any]):
        self.directory = Path(directory)
        self.identity = {"format_version": FORMAT_VERSION, **identity}
        self.shard_size = int(identity["shard_size"])

    def claim(self) -> None:
        """Create the folder, or check that its shards were made with the same settings (one line if not)."""
        meta = self.directory / IDENTITY_FILE
        if meta.is_file():
            recorded = json.loads(meta.read_text(encoding="utf-8"))
            differing = sorted(k for k in set(recorded) | set(self.identity) if recorded.get(k) != self.identity.get(k))
            if differing:
                raise IndexMismatchError(
                    f"{self.directory}: holds vectors made with other settings ({', '.join(differing)} differ); "
                    "choose another --out, or delete the folder to start again")
        elif self.directory.is_dir() and any(self.directory.glob("*.npy")):
            raise IndexMismatchError(f"{self.directory}: holds .npy files that hyporag embed did not write "
                                     f"(no {IDENTITY_FILE}); choose another --out")
        self.directory.mkdir(parents=True, exist_ok=True)
        write_json_atomic(meta, self.identity)

    def paths(self, number: int) -> tuple[Path, Path]:
        stem = self.directory / f"shard-{number:05d}"
        return stem.with_suffix(".npy"), stem.with_suffix(".ids.json")

    def is_done(self, number: int, ids: list[str]) -> bool:
        """Both files present, the ids those of the plan and as many rows as ids: a shard a kill cut short is
        redone, and a shard holding other passages is refused."""
        vectors_path, ids_path = self.paths(number)
        if not (vectors_path.is_file() and ids_path.is_file()):
            return False
        if json.loads(ids_path.read_text(encoding="utf-8")) != ids:
            raise IndexMismatchError(f"{ids_path}: other passage ids than shard {number} of this corpus; the folder "
                                     "was edited by hand? delete the shard to redo it")
        try:
            rows = np.load(vectors_path, mmap_mode="r").shape[0]
        except (ValueError, OSError, EOFError):  # a shard cut short (a kill, a full disk): encoded again
            return False
        if rows != len(ids):
            raise IndexMismatchError(f"{vectors_path}: {rows} vectors for {len(ids)} ids; delete it to redo it")
        return True

    def write(self, number: int, ids: list[str], vectors: np.ndarray) -> None:
        """The ids first, then the vectors, each renamed into place: a shard counts once its .npy exists."""
        if len(vectors) != len(ids):
            raise IndexMismatchError(f"shard {number}: {len(vectors)} vectors for {len(ids)} passages")
        vectors_path, ids_path = self.paths(number)
        write_json_atomic(ids_path, ids)
        partial = vectors_path.with_name(f".{vectors_path.name}.partial")
        try:
            with partial.open("wb") as handle:
                np.save(handle, np.ascontiguousarray(vectors, dtype=np.float32))
                handle.flush()
                os.fsync(handle.fileno())
            partial.replace(vectors_path)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise_if_disk_full(exc, vectors_path)
            raise

    def read_all(self) -> tuple[np.ndarray, list[str]]:
        """Every shard in order, concatenated (for tests and small corpora)."""
        vectors, ids = [], []
        for path in sorted(self.directory.glob("shard-*.npy")):
            vectors.append(np.load(path))
            ids.extend(json.loads(path.with_suffix(".ids.json").read_text(encoding="utf-8")))
        return np.concatenate(vectors), ids


def plan_shards(passages: Iterable[Passage], size: int) -> Iterator[tuple[int, int, list[Passage]]]:
    """(number, first row, passages) for consecutive shards of `size` passages, streamed."""
    number, start, shard = 0, 0, []
    for passage in passages:
        shard.append(passage)
        if len(shard) == size:
            yield number, start, shard
            number, start, shard = number + 1, start + size, []
    if shard:
        yield number, start, shard
