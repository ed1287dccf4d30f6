"""The scale path on a small corpus: IVF-PQ (and OPQ) trained on a sample and fed in chunks from a memory map,
loaded memory-mapped, with recall against exact search and `nprobe` trading speed for recall."""

from __future__ import annotations

import numpy as np
import pytest

from hyporag.retrieval import dense
from hyporag.retrieval.dense import DenseIndex, build_faiss, ivf_lists, pq_subquantizers


def clustered(n=3000, d=32, seed=0):
    """Unit vectors around 60 centres: the structure real passage embeddings have, so IVF can find neighbours."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(60, d))
    x = centres[rng.integers(0, 60, n)] + 0.35 * rng.normal(size=(n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def recall(index, queries, exact, k=15):
    _, found = index.search(queries, k)
    return np.mean([len(set(f) & set(e)) / k for f, e in zip(found, exact, strict=True)])


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    directory = tmp_path_factory.mktemp("dense")
    vectors = clustered()
    np.save(directory / "vectors.npy", vectors)
    return directory, vectors


def test_sizes_follow_the_faiss_guidance():
    assert pq_subquantizers(384) == 96 and pq_subquantizers(768) == 192 and pq_subquantizers(30) == 6
    assert ivf_lists(1_000_000) == 4000 and ivf_lists(100) == 2 and ivf_lists(10) == 1


@pytest.mark.parametrize("kind, n", [("ivfpq", 3000), ("opq-ivfpq", 800)])  # OPQ's rotation trains slowly
def test_ivfpq_from_a_memory_map_recalls_exact_search(kind, n, monkeypatch, tmp_path):
    directory, vectors = tmp_path, clustered(n)
    np.save(directory / "vectors.npy", vectors)
    monkeypatch.setattr(dense, "ADD_CHUNK", 1000)  # several chunks even on a small corpus
    queries = vectors[:50] + 0.05
    _, exact = build_faiss(vectors, "flat").search(queries, 15)
    index = build_faiss(np.load(directory / "vectors.npy", mmap_mode="r"), kind)
    assert index.ntotal == len(vectors)
    import faiss

    ivf = faiss.extract_index_ivf(index)
    ivf.nprobe = ivf.nlist // 4
    codes_only = recall(index, queries, exact)
    rescored = DenseIndex(index, None, kind, np.load(directory / "vectors.npy", mmap_mode="r"))
    rows, scores = rescored.search_vectors(queries, 15)
    with_rescoring = np.mean([len(set(f) & set(e)) / 15 for f, e in zip(rows, exact, strict=True)])
    assert with_rescoring >= 0.9 and with_rescoring > codes_only  # the shortlist re-scored from the vectors
    assert np.all(np.diff(scores, axis=1) <= 1e-6)  # best first


def test_an_ivf_index_is_loaded_memory_mapped_and_nprobe_is_a_setting(saved):
    import faiss

    directory, vectors = saved

    class NoEncoder:
        dimension = vectors.shape[1]

    opened = DenseIndex.load(directory, NoEncoder(), "ivfpq", nprobe=3)
    ivf = faiss.extract_index_ivf(opened.index)
    assert ivf.nprobe == 3 and (directory / "faiss-ivfpq.index").is_file()
    queries = vectors[:50] + 0.05
    _, exact = build_faiss(vectors, "flat").search(queries, 15)

    def found(opened_index):
        rows, _ = opened_index.search_vectors(queries, 15)
        return np.mean([len(set(f) & set(e)) / 15 for f, e in zip(rows, exact, strict=True)])

    wide = DenseIndex.load(directory, NoEncoder(), "ivfpq", nprobe=ivf.nlist)
    assert found(wide) >= found(opened) and found(wide) >= 0.9  # more lists searched, never worse


def test_bm25_built_in_chunks_is_bm25s_index_to_the_float(tmp_path):
    """The chunked build (one batch in memory) gives bm25s's own rows and scores; the vocabulary spans batches."""
    from hyporag.retrieval.bm25 import BM25Index
    from tests.conftest import PASSAGES

    texts = [f"{t}. {c}" for _, t, c in PASSAGES] * 3  # repeated passages: document frequencies above 1
    whole = BM25Index.build(texts, tmp_path / "whole", show_progress=False)
    chunked = BM25Index.build_in_chunks((texts[i:i + 4] for i in range(0, len(texts), 4)), tmp_path / "chunked",
                                        show_progress=False)
    queries = ["insulin beta cells", "bone osteoclasts resorb", "kidney erythropoietin hypoxia", "the of"]
    (rows_a, scores_a), (rows_b, scores_b) = whole.search_many(queries, 6), chunked.search_many(queries, 6)
    np.testing.assert_allclose(scores_a, scores_b, atol=1e-6)
    assert set(map(tuple, rows_a[:, :1])) == set(map(tuple, rows_b[:, :1]))
    np.testing.assert_allclose(whole.score_rows("insulin", np.arange(len(texts))),
                               chunked.score_rows("insulin", np.arange(len(texts))), atol=1e-6)
