"""Dense retrieval: normalised passage vectors saved once, FAISS built from them (flat by default, HNSW or IVF).

Vectors are the expensive part (embedding 71k passages takes the better part of an hour on 2 cores), so they are
written in shards as they are computed (an interrupted build resumes) and a FAISS rebuild never re-embeds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from hyporag.foundation.errors import ConfigError, IndexMismatchError
from hyporag.retrieval.mapped import release_pages

FAISS_KINDS = ("flat", "hnsw", "ivf", "ivfpq", "opq-ivfpq")
IVF_KINDS = ("ivf", "ivfpq", "opq-ivfpq")  # memory-mappable: searched from the page cache, not loaded into RAM
PQ_KINDS = ("ivfpq", "opq-ivfpq")
REFINE = 4  # a PQ search shortlists k·REFINE passages, re-scored exactly
SMALL_BATCH = 32
MAX_DEFAULT_NPROBE = 128
ADD_CHUNK = 100_000  # rows added to FAISS at a time, read from the memory-mapped vectors
SAMPLE_CHUNK = 20_000  # training-sample rows copied between page releases


def embed_in_shards(batches: Iterable[list[tuple[str, str]]], encoder, directory: Path, total: int,
                    batch_size: int = 64, progress: bool = True) -> np.ndarray:
    """Encode (title, contents) batches shard by shard (each saved atomically), skipping shards already on disk;
    returns all vectors. The encoder's spec is recorded beside the shards: shards of another spec are discarded,
    never mixed in."""
    import json
    import shutil

    from tqdm import tqdm

    identity = {"encoder": encoder.spec.to_dict(), "dimension": encoder.dimension}
    meta = directory / "encoder.json"
    if directory.is_dir() and (not meta.is_file() or json.loads(meta.read_text()) != identity):
        shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps(identity))
    shards: list[np.ndarray] = []
    bar = tqdm(total=total, desc="embedding", unit="passage", disable=not progress)
    for number, passages in enumerate(batches):
        shard = directory / f"shard-{number:05d}.npy"
        if shard.is_file():
            vectors = np.load(shard)
            if len(vectors) != len(passages):
                raise IndexMismatchError(f"{shard}: holds {len(vectors)} vectors, expected {len(passages)}; "
                                         "delete it to redo")
        else:
            vectors = encoder.encode_passages(passages, batch_size=batch_size)
            partial = shard.with_suffix(".partial.npy")
            np.save(partial, vectors)
            partial.replace(shard)
        shards.append(vectors)
        bar.update(len(passages))
    bar.close()
    return np.concatenate(shards) if shards else np.zeros((0, encoder.dimension), dtype=np.float32)


def ivf_lists(count: int) -> int:
    """Inverted lists: ~4·sqrt(n) (FAISS's guidance for 1M-10M vectors), at least 1, at most n / 39 so that each
    list has the ~39 training points k-means wants."""
    return max(1, min(int(4 * math.sqrt(count)), count // 39 or 1))


def pq_subquantizers(dimension: int) -> int:
    """The largest m <= d / 4 that divides d: 4 dimensions a byte-sized code (384 -> 96, 768 -> 192)."""
    return next(m for m in range(max(1, dimension // 4), 0, -1) if dimension % m == 0)


def training_sample(vectors: np.ndarray, lists: int, seed: int = 0) -> np.ndarray:
    """An evenly spread, seeded sample for k-means and PQ training: 64 points a list, at least 10k, at most all."""
    size = min(len(vectors), max(10_000, 64 * lists))
    rows = np.sort(np.random.default_rng(seed).choice(len(vectors), size=size, replace=False))
    sample = np.empty((size, vectors.shape[1]), dtype=np.float32)
    for start in range(0, size, SAMPLE_CHUNK):  # a spread sample maps nearly every page (the kernel maps around
        sample[start:start + SAMPLE_CHUNK] = vectors[rows[start:start + SAMPLE_CHUNK]]  # faults): release as we go
        release_pages(vectors)
    return sample


def build_threads() -> int:
    """OpenMP threads for FAISS training and adds: $HYPORAG_FAISS_THREADS, else 1 on a machine of 2 cores or fewer.
    FAISS's threads spin while they wait; with anything else running on 2 cores, two of them trained an OPQ index
    33x slower than one (62.8 s against 1.9 s, measured side by side)."""
    import os

    cores = os.cpu_count() or 1
    return int(os.environ.get("HYPORAG_FAISS_THREADS") or (1 if cores <= 2 else cores))


def build_faiss(vectors: np.ndarray, kind: str = "flat", hnsw_m: int = 32, lists: int | None = None):
    """An inner-product FAISS index over the vectors (a memory map is fine: they are added in chunks). IVF kinds
    are trained on a sample; `ivfpq` compresses each vector to d/4 bytes, `opq-ivfpq` rotates it first (OPQ)."""
    import faiss

    faiss.omp_set_num_threads(build_threads())
    dimension = vectors.shape[1]
    if kind == "flat":
        index = faiss.IndexFlatIP(dimension)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(dimension, hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = 80
    elif kind in IVF_KINDS:
        index = trained_ivf(vectors, kind, lists)
    else:
        raise ConfigError(f"unknown FAISS index kind {kind!r}: use one of {', '.join(FAISS_KINDS)}")
    for start in range(0, len(vectors), ADD_CHUNK):
        index.add(np.ascontiguousarray(vectors[start:start + ADD_CHUNK], dtype=np.float32))
        release_pages(vectors)  # RSS stays one chunk, not the whole file
    return index


def trained_ivf(vectors: np.ndarray, kind: str, lists: int | None = None):
    """An empty IVF index of `kind`, trained on the seeded sample: a whole build and every shard start here."""
    import faiss

    lists = lists or ivf_lists(len(vectors))
    dimension = vectors.shape[1]
    m, bits = pq_subquantizers(dimension), min(8, max(1, int(math.log2(max(2, len(vectors) // 39)))))
    factory = {"ivf": f"IVF{lists},Flat", "ivfpq": f"IVF{lists},PQ{m}x{bits}",
               "opq-ivfpq": f"OPQ{m},IVF{lists},PQ{m}x{bits}"}[kind]  # 8-bit codes from 10k vectors up
    index = faiss.index_factory(dimension, factory, faiss.METRIC_INNER_PRODUCT)
    index.train(training_sample(vectors, lists))
    return index


def default_nprobe(lists: int) -> int:
    """lists / 16, at most 128: a query scans nprobe lists of ~n / lists vectors each, so an uncapped share of the
    lists grows the cost with n (13 ms at 5M passages, 559 lists); the shortlist's exact re-scoring keeps recall
    (docs/results/scale.md has the sweep). `--nprobe` sets it."""
    return max(1, min(lists // 16, MAX_DEFAULT_NPROBE))


class DenseIndex:
    """FAISS index plus the encoder that made its vectors (queries use its query side); `search_vectors` is the one
    batched call."""

    DIRNAME = "dense"

    def __init__(self, index, encoder, kind: str, exact: np.ndarray | None = None):
        import os

        self.index = index
        self.encoder = encoder
        self.kind = kind
        self.exact = exact  # PQ kinds: the memory-mapped full vectors that re-score their shortlist
        self.threads = os.cpu_count() or 1

    @classmethod
    def load(cls, directory: Path, encoder, kind: str = "flat", nprobe: int | None = None) -> DenseIndex:
        """Open (building it once from the saved vectors if missing) the FAISS index of `kind`. IVF kinds are
        memory-mapped read-only, and search `nprobe` of their lists (default lists / 16, at most 128)."""
        import faiss

        path = directory / f"faiss-{kind}.index"
        if not path.is_file():
            index = build_faiss(np.load(directory / "vectors.npy", mmap_mode="r"), kind)
            faiss.write_index(index, str(path))
        if kind in IVF_KINDS:  # a merged shard build keeps its lists in faiss-<kind>.ivfdata beside the index
            on_disk = (directory / f"faiss-{kind}.ivfdata").is_file()
            flags = faiss.IO_FLAG_ONDISK_SAME_DIR if on_disk else faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY
            index = faiss.read_index(str(path), flags)
            ivf = faiss.extract_index_ivf(index)
            ivf.nprobe = min(ivf.nlist, nprobe or default_nprobe(ivf.nlist))
        else:
            index = faiss.read_index(str(path))
        if kind == "hnsw":
            index.hnsw.efSearch = 128
        exact = np.load(directory / "vectors.npy", mmap_mode="r") if kind in PQ_KINDS else None
        return cls(index, encoder, kind, exact)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Queries (and hypotheses), through the query side of the encoder that made the vectors."""
        return self.encoder.encode_queries(texts)

    def search_vectors(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """One FAISS call for all query vectors. A program's 1-3 queries run on one OpenMP thread: FAISS's thread
        team costs ~17 ms to wake for a handful of queries on a busy 2-core machine, 3000x the search itself."""
        import faiss

        faiss.omp_set_num_threads(1 if len(vectors) < SMALL_BATCH else self.threads)
        queries = np.ascontiguousarray(vectors, dtype=np.float32)
        depth = min(k * REFINE if self.exact is not None else k, self.index.ntotal)
        scores, rows = self.index.search(queries, depth)
        if self.exact is None:
            return rows, scores
        return self._rescore(queries, rows, min(k, self.index.ntotal))

    def _rescore(self, queries: np.ndarray, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """PQ codes rank a shortlist; the exact inner products (from the memory map: k·REFINE rows a query, read
        from the page cache) pick its top k, so compression costs little recall."""
        out_rows = np.full((len(queries), k), -1, dtype=np.int64)
        out_scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        for i, (query, candidates) in enumerate(zip(queries, rows, strict=True)):
            candidates = np.unique(candidates[candidates >= 0])
            exact = np.asarray(self.exact[candidates], dtype=np.float32) @ query
            best = np.argsort(-exact)[:k]
            out_rows[i, :len(best)], out_scores[i, :len(best)] = candidates[best], exact[best]
        return out_rows, out_scores
