"""Precomputed passage vectors (`hyporag index build --vectors DIR`) instead of embedding: MedRAG publishes
MedCPT vectors for its corpora, and embedding MedCorp on a CPU would take weeks.

Two layouts are read. Ours: `*.npy` shards, each with its passage ids beside it (`<stem>.ids.json`, a JSON list,
or `<stem>.ids.txt`, one id a line). MedRAG's: `<corpus>/index/<encoder>/embedding/<stem>.npy`, row i of a shard
being line i of `<corpus>/chunk/<stem>.jsonl`. Every shard is checked against the corpus (count, ids, dimension)
and written into the store's row order through a memory map, so the vectors are never all in RAM twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from hyporag.foundation.errors import IndexMismatchError
from hyporag.retrieval.mapped import release_pages
from hyporag.retrieval.store import PassageStore
from hyporag.retrieval.vector_shards import IDENTITY_FILE


def _chunk_dir(vectors_dir: Path) -> Path | None:
    """MedRAG's `chunk/` folder above an `embedding/` folder (corpus/index/<org>/<model>/embedding)."""
    for parent in list(vectors_dir.parents)[:4]:
        if (parent / "chunk").is_dir():
            return parent / "chunk"
    return None


def _ids_for(shard: Path, chunk_dir: Path | None) -> list[str]:
    for name, read in ((f"{shard.stem}.ids.json", lambda p: [str(i) for i in json.loads(p.read_text())]),
                       (f"{shard.stem}.ids.txt", lambda p: p.read_text(encoding="utf-8").split())):
        if (shard.parent / name).is_file():
            return read(shard.parent / name)
    if chunk_dir is not None and (chunk_dir / f"{shard.stem}.jsonl").is_file():
        lines = (chunk_dir / f"{shard.stem}.jsonl").read_text(encoding="utf-8").splitlines()
        return [str(json.loads(line)["id"]) for line in lines if line.strip()]
    raise IndexMismatchError(f"{shard}: no ids beside it ({shard.stem}.ids.json or .ids.txt) and no MedRAG "
                             f"chunk/{shard.stem}.jsonl above it; hyporag cannot tell which passage a row is")


def shards(vectors_dir: Path) -> Iterator[tuple[Path, np.ndarray, list[str]]]:
    """(shard, vectors memory-mapped, ids) for every shard, each checked for rows = ids and one dimension."""
    files = sorted(vectors_dir.glob("*.npy"))
    if not files:
        raise IndexMismatchError(f"{vectors_dir}: no .npy vector shards")
    chunk_dir, dimension = _chunk_dir(vectors_dir), None
    for shard in files:
        vectors = load_shard(shard)
        ids = _ids_for(shard, chunk_dir)
        if vectors.ndim != 2 or len(vectors) != len(ids):
            raise IndexMismatchError(f"{shard}: {vectors.shape[0] if vectors.ndim else 0} vectors but {len(ids)} "
                                     "ids; the shard and its ids must be the same length")
        if dimension not in (None, vectors.shape[1]):
            raise IndexMismatchError(f"{shard}: dimension {vectors.shape[1]}, but earlier shards have {dimension}")
        dimension = vectors.shape[1]
        yield shard, vectors, ids


def load_shard(shard: Path) -> np.ndarray:
    """A shard memory-mapped, or one line when it is not a whole .npy file (a kill or a full disk cut it short)."""
    try:
        return np.load(shard, mmap_mode="r")
    except (ValueError, OSError, EOFError) as exc:
        raise IndexMismatchError(f"{shard}: not a complete .npy file ({str(exc).splitlines()[0][:120]}); if "
                                 "`hyporag embed` wrote it, re-run the same embed command to redo that shard") from None


def check_made_for(vectors_dir: Path, corpus_fingerprint: str | None, encoder: dict, max_passage_chars: int) -> None:
    """Vectors `hyporag embed` made (its embed.json) must be of this corpus's contents, split as this index splits
    them, by the encoder that will encode the queries: another version of the corpus leaves changed passages with
    stale vectors, and another encoder of the same dimension answers every query with the wrong model."""
    meta = Path(vectors_dir) / IDENTITY_FILE
    if not meta.is_file():
        return  # another tool's vectors (MedRAG's): ids and counts are all there is to check
    try:
        made = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IndexMismatchError(f"{meta}: unreadable ({exc}); re-run hyporag embed into a new --out") from None
    if corpus_fingerprint and made.get("corpus_fingerprint") != corpus_fingerprint:
        raise IndexMismatchError(f"{vectors_dir}: these vectors were made from another version of the corpus "
                                 f"({made.get('corpus_source')}: its contents changed since `hyporag embed`); embed "
                                 "the corpus again")
    if made.get("encoder") != encoder:
        theirs, ours = (made.get("encoder") or {}).get("name"), encoder.get("name")
        raise IndexMismatchError(f"{vectors_dir}: made by encoder {theirs!r} ({made.get('encoder')}), but this index "
                                 f"encodes queries with {ours!r}; give --embedder {theirs} or embed again")
    if made.get("max_passage_chars") not in (None, max_passage_chars):
        raise IndexMismatchError(f"{vectors_dir}: passages were split at {made.get('max_passage_chars')} characters, "
                                 f"this index splits them at {max_passage_chars}")


def ingest_vectors(vectors_dir: Path, store: PassageStore, target: Path, log=print) -> tuple[int, int]:
    """Write `target` (.npy, store row order) from the shards; returns (count, dimension). Refuses, in one line,
    an id the corpus does not have, a passage no shard covers, or a passage covered twice."""
    row_of = {pid: row for row, pid in enumerate(store.ids())}
    out, filled = None, np.zeros(store.count, dtype=bool)
    partial = target.with_suffix(".partial.npy")
    target.parent.mkdir(parents=True, exist_ok=True)
    for shard, vectors, ids in shards(Path(vectors_dir)):
        if out is None:
            out = np.lib.format.open_memmap(partial, mode="w+", dtype=np.float32, shape=(store.count, vectors.shape[1]))
        rows = np.fromiter((row_of.get(pid, -1) for pid in ids), dtype=np.int64, count=len(ids))
        if (rows < 0).any():
            unknown = ids[int(np.argmax(rows < 0))]
            raise IndexMismatchError(f"{shard}: passage id {unknown!r} is not in the corpus ({store.count} passages); "
                                     "are these vectors of another corpus?")
        twice = _first_repeat(ids) if len(np.unique(rows)) != len(rows) else None
        if twice is None and filled[rows].any():
            twice = ids[int(np.argmax(filled[rows]))]
        if twice is not None:
            raise IndexMismatchError(f"{shard}: passage id {twice!r} has a vector twice")
        out[rows] = vectors
        release_pages(out)  # written pages go to the page cache, not this process's RSS
        release_pages(vectors)
        filled[rows] = True
        log(f"vectors: {shard.name}: {len(ids)} rows")
    if not filled.all():
        missing = next(pid for pid, row in row_of.items() if not filled[row])
        raise IndexMismatchError(f"{vectors_dir}: {int((~filled).sum())} of {store.count} passages have no vector "
                                 f"(first: {missing!r}); the vectors must cover the whole corpus")
    dimension = int(out.shape[1])
    out.flush()
    del out
    partial.replace(target)
    return store.count, dimension


def _first_repeat(ids: list[str]) -> str | None:
    seen: set[str] = set()
    for pid in ids:
        if pid in seen:
            return pid
        seen.add(pid)
    return None
