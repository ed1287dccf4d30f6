"""An IVF index built in shards: trained once, each shard of the vectors added on its own (another process or
machine), then merged into one index whose inverted lists live on disk (`faiss.contrib.ondisk.merge_ondisk`) and
are memory-mapped at search time, so the index needs neither one machine's time to add nor its RAM to hold.

Files, in an index's `dense/` directory: `faiss-<kind>.trained` (the empty trained index), `faiss-<kind>.part-I-
of-N` (shard I's lists), then `faiss-<kind>.index` with `faiss-<kind>.ivfdata` beside it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hyporag.foundation.errors import ConfigError, IndexMismatchError
from hyporag.retrieval.dense import ADD_CHUNK, IVF_KINDS, build_threads, trained_ivf
from hyporag.retrieval.index import _save, read_manifest


def _check_kind(kind: str) -> None:
    if kind not in IVF_KINDS:
        raise ConfigError(f"sharded FAISS builds need an IVF kind ({', '.join(IVF_KINDS)}), got {kind!r}")


def trained_path(dense_dir: Path, kind: str) -> Path:
    return Path(dense_dir) / f"faiss-{kind}.trained"


def part_path(dense_dir: Path, kind: str, index: int, count: int) -> Path:
    return Path(dense_dir) / f"faiss-{kind}.part-{index}-of-{count}"


def shard_rows(total: int, index: int, count: int) -> range:
    """Shard `index` of `count` (1-based): a contiguous run of rows, so ids stay the rows of vectors.npy."""
    return range((index - 1) * total // count, index * total // count)


def train(dense_dir: Path, kind: str = "ivfpq", lists: int | None = None) -> Path:
    """Train the IVF (and PQ) on the seeded sample `build_faiss` uses, and save it empty: every shard starts here."""
    import faiss

    _check_kind(kind)
    faiss.omp_set_num_threads(build_threads())
    vectors = np.load(Path(dense_dir) / "vectors.npy", mmap_mode="r")
    return _write(trained_ivf(vectors, kind, lists), trained_path(dense_dir, kind))


def add_shard(dense_dir: Path, kind: str, index: int, count: int) -> Path:
    """Add shard `index` of `count` of the vectors to a copy of the trained index and save its lists."""
    import faiss

    _check_kind(kind)
    source = trained_path(dense_dir, kind)
    if not source.is_file():
        raise IndexMismatchError(f"{source}: not trained yet; run `hyporag index faiss-train` first")
    if not 1 <= index <= count:
        raise ConfigError(f"shard {index}/{count}: the shard number must be from 1 to {count}")
    faiss.omp_set_num_threads(build_threads())
    trained = faiss.read_index(str(source))
    vectors = np.load(Path(dense_dir) / "vectors.npy", mmap_mode="r")
    rows = shard_rows(len(vectors), index, count)
    for start in range(rows.start, rows.stop, ADD_CHUNK):
        stop = min(start + ADD_CHUNK, rows.stop)
        trained.add_with_ids(np.ascontiguousarray(vectors[start:stop], dtype=np.float32),
                             np.arange(start, stop, dtype=np.int64))
    return _write(trained, part_path(dense_dir, kind, index, count))


def merge(dense_dir: Path, kind: str, count: int) -> Path:
    """Merge every shard's lists into `faiss-<kind>.index`, its lists in `faiss-<kind>.ivfdata` beside it."""
    import faiss
    from faiss.contrib.ondisk import merge_ondisk

    _check_kind(kind)
    dense_dir = Path(dense_dir)
    parts = [part_path(dense_dir, kind, i, count) for i in range(1, count + 1)]
    missing = [p.name for p in parts if not p.is_file()]
    if missing:
        raise IndexMismatchError(f"{dense_dir}: shard(s) {', '.join(missing)} not added yet; run "
                                 "`hyporag index faiss-add` for each")
    total = len(np.load(dense_dir / "vectors.npy", mmap_mode="r"))
    index = faiss.read_index(str(trained_path(dense_dir, kind)))
    data = dense_dir / f"faiss-{kind}.ivfdata"
    merge_ondisk(index, [str(p) for p in parts], str(data.with_suffix(".ivfdata.partial")))
    if index.ntotal != total:
        raise IndexMismatchError(f"{dense_dir}: the shards hold {index.ntotal} vectors, vectors.npy {total}")
    target = _write(index, dense_dir / f"faiss-{kind}.index", data_name=data.name)
    data.with_suffix(".ivfdata.partial").replace(data)
    return target


def _write(index, path: Path, data_name: str | None = None) -> Path:
    """Write atomically; an on-disk index names its lists file by its final name, found beside it when read
    (faiss.IO_FLAG_ONDISK_SAME_DIR), so the directory can move."""
    import faiss

    if data_name is not None:
        faiss.downcast_InvertedLists(faiss.extract_index_ivf(index).invlists).filename = data_name
    partial = path.with_name(path.name + ".partial")
    faiss.write_index(index, str(partial))
    partial.replace(path)
    return path


def merge_into_index(index_dir: Path, kind: str, count: int) -> Path:
    """`merge` in an index directory, then the manifest lists the merged kind and checksums its two files."""

    index_dir = Path(index_dir)
    manifest = read_manifest(index_dir)
    dense = (manifest.get("parts") or {}).get("dense")
    if not dense:
        raise IndexMismatchError(f"{index_dir}: has no dense vectors; build them first (hyporag index build "
                                 "--retriever dense, or --vectors)")
    if kind in dense["faiss"]:
        raise IndexMismatchError(f"{index_dir}: already has a faiss {kind} index; use another --index-dir")
    target = merge(index_dir / "dense", kind, count)
    dense["faiss"].append(kind)
    dense[f"faiss_{kind}_shards"] = count
    _save(index_dir, manifest)
    return target
