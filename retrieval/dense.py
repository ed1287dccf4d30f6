"""Dense retrieval: normalised passage vectors saved once, FAISS built from them (flat by default, HNSW or IVF).

Vectors are the expensive part (embedding 71k passages takes the better part of an hour on 2 cores), so they are
written in shards as they are computed (an interrupted build resumes) and a FAISS rebuild never re-embeds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from hyporag.errors import ConfigError, IndexMismatchError

FAISS_KINDS = ("flat", "hnsw", "ivf")
SMALL_BATCH = 32


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


def build_faiss(vectors: np.ndarray, kind: str = "flat", hnsw_m: int = 32, ivf_lists: int | None = None):
    """An inner-product FAISS index over normalised vectors (so scores are cosine similarities)."""
    import faiss

    dimension = vectors.shape[1]
    if kind == "flat":
        index = faiss.IndexFlatIP(dimension)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(dimension, hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = 80
        index.hnsw.efSearch = 128
    elif kind == "ivf":
        lists = ivf_lists or max(1, int(4 * math.sqrt(len(vectors))))
        quantizer = faiss.IndexFlatIP(dimension)
        index = faiss.IndexIVFFlat(quantizer, dimension, lists, faiss.METRIC_INNER_PRODUCT)
        index.train(vectors)
        index.nprobe = max(1, lists // 16)
    else:
        raise ConfigError(f"unknown FAISS index kind {kind!r}: use one of {', '.join(FAISS_KINDS)}")
    index.add(vectors)
    return index


class DenseIndex:
    """FAISS index plus the encoder that made its vectors (queries use its query side); `search_vectors` is the one
    batched call."""

    DIRNAME = "dense"

    def __init__(self, index, encoder, kind: str):
        import os

        self.index = index
        self.encoder = encoder
        self.kind = kind
        self.threads = os.cpu_count() or 1

    @classmethod
    def load(cls, directory: Path, encoder, kind: str = "flat") -> DenseIndex:
        import faiss

        path = directory / f"faiss-{kind}.index"
        if not path.is_file():
            vectors = np.load(directory / "vectors.npy", mmap_mode="r")
            index = build_faiss(np.ascontiguousarray(vectors), kind)
            faiss.write_index(index, str(path))
        index = faiss.read_index(str(path))
        if kind == "hnsw":
            index.hnsw.efSearch = 128
        return cls(index, encoder, kind)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Queries (and hypotheses), through the query side of the encoder that made the vectors."""
        return self.encoder.encode_queries(texts)

    def search_vectors(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """One FAISS call for all query vectors. A program's 1-3 queries run on one OpenMP thread: FAISS's thread
        team costs ~17 ms to wake for a handful of queries on a busy 2-core machine, 3000x the search itself."""
        import faiss

        faiss.omp_set_num_threads(1 if len(vectors) < SMALL_BATCH else self.threads)
        scores, rows = self.index.search(np.ascontiguousarray(vectors, dtype=np.float32), min(k, self.index.ntotal))
        return rows, scores
