"""BM25 search: bm25s's own scores, and the block top-k gives their exact top k, best first, ties by row."""

from __future__ import annotations

import numpy as np
import pytest

from hyporag.retrieval.bm25 import BLOCK, BM25Index, top_k


@pytest.mark.parametrize("n,k", [(50, 5), (4 * BLOCK * 3 + 17, 3), (300_001, 15), (BLOCK * 40, 15)])
def test_block_top_k_is_the_exact_top_k(n, k):
    rng = np.random.default_rng(n)
    scores = rng.integers(0, 2000, n).astype(np.float32)  # many ties
    scores[rng.integers(0, n, 5)] = 5000.0  # a few large ones, possibly in one block
    rows, values = top_k(scores, k)
    expected = np.lexsort((np.arange(n), -scores))[:k]  # full sort: score descending, then row
    assert rows.tolist() == expected.tolist() and values.tolist() == scores[expected].tolist()


def test_search_gives_bm25s_scores_and_its_top_rows(tmp_path):
    import bm25s

    rng = np.random.default_rng(0)
    words = [f"term{i}" for i in range(3000)]
    texts = [" ".join(rng.choice(words, rng.integers(5, 30))) for _ in range(20_000)]
    index = BM25Index.build(texts, tmp_path / "bm25", show_progress=False)
    queries = [" ".join(rng.choice(words, 6)) for _ in range(20)] + ["the and of"]
    rows, scores = index.search_many(queries, 15)
    tokens = bm25s.tokenize(queries[:-1], stopwords="en", stemmer=index.stemmer, return_ids=False,
                            show_progress=False)
    theirs_rows, theirs_scores = index.model.retrieve(tokens, k=15, show_progress=False, n_threads=1)
    assert np.array_equal(scores[:-1], theirs_scores)  # the same sums, bit for bit, in the same order
    for ours, theirs, values in zip(rows[:-1], theirs_rows, theirs_scores, strict=True):
        for value in set(values[values > values[-1]]):  # each score above the cut: the same rows (bm25s orders
            assert set(ours[values == value]) == set(theirs[values == value])  # ties arbitrarily, ours by row)
    assert rows[-1].tolist() == [-1] * 15 and scores[-1].tolist() == [0.0] * 15  # stopwords only
    full = index.model.get_scores(tokens[0])
    picked = rows[0][:3]
    assert np.allclose(index.score_rows(queries[0], picked), full[picked])
