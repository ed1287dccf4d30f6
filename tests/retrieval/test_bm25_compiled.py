"""BM25 on the compiled path: bit-identical scores and the same ranking (ties by row) as bm25s's np.add.at with
the exact top-k, over windows and the whole array; row scores without full scoring; the two-stage search's
overlap; the JIT cache on disk; the numpy fallback announced when numba is missing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from hyporag.foundation.errors import IndexMismatchError
from hyporag.retrieval import bm25_compiled, bm25_kernels
from hyporag.retrieval.bm25 import BM25Index
from hyporag.retrieval.bm25_forward import build_forward, load_forward


def _corpus(n: int, vocabulary: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    words = np.array([f"term{i}" for i in range(vocabulary)])
    weights = 1.0 / np.arange(1, vocabulary + 1)  # Zipf: a few terms in most passages, as in text
    weights /= weights.sum()
    return [" ".join(rng.choice(words, rng.integers(3, 40), p=weights)) for _ in range(n)]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """One index searched by both backends; 150k passages in windows of 16k, so the windowed loop crosses windows
    (and its last window is a partial one)."""
    directory = tmp_path_factory.mktemp("bm25") / "bm25"
    texts = _corpus(150_000, 4000, 0)
    BM25Index.build(texts, directory, show_progress=False)
    rng = np.random.default_rng(1)
    words = [f"term{i}" for i in range(4000)]
    queries = [" ".join(rng.choice(words, rng.integers(1, 60))) for _ in range(40)]
    queries += ["term0 term0 term1 term3999", "term0", "term3999 term3998", "and the of"]  # repeats, one term, rare
    compiled = BM25Index.load(directory)
    compiled.compiled = bm25_compiled.CompiledSearch(compiled.model, window=1 << 14)
    return BM25Index.load(directory, backend="numpy"), compiled, queries, directory


def _bits(array: np.ndarray) -> list[int]:
    return np.asarray(array, dtype=np.float32).view(np.int32).tolist()


@pytest.mark.parametrize("k", [1, 15, 1000])
def test_compiled_search_equals_the_numpy_reference_bit_for_bit(pair, k):
    reference, compiled, queries, _ = pair
    assert compiled.backend == "numba" and reference.backend == "numpy"
    ours_rows, ours_scores = compiled.search_many(queries, k)
    their_rows, their_scores = reference.search_many(queries, k)
    assert ours_rows.tolist() == their_rows.tolist()  # the same rows in the same order: ties broken by row
    assert _bits(ours_scores) == _bits(their_scores)  # the same float32 sums, in the same term order


def test_ties_are_broken_by_row_on_every_loop(pair):
    """Many passages share a score for a one-term query; the heap must keep the lowest rows, as the reference."""
    reference, compiled, _, _ = pair
    rows, scores = compiled.search_many(["term3999"], 50)
    expected_rows, expected_scores = reference.search_many(["term3999"], 50)
    assert len(set(scores[0].tolist())) < 50  # the case is real: ties within the top 50
    assert rows.tolist() == expected_rows.tolist()
    whole = bm25_compiled.CompiledSearch(compiled.model)
    whole.windowed = False
    ids = np.asarray(compiled._term_ids(["term3999"]))
    assert whole.top_k(ids, 50)[0].tolist() == expected_rows[0].tolist()


def test_window_loop_and_whole_array_loop_agree_on_every_query(pair):
    _, compiled, queries, _ = pair
    windowed = bm25_compiled.CompiledSearch(compiled.model, window=1 << 14)
    whole = bm25_compiled.CompiledSearch(compiled.model)
    whole.windowed = False
    from hyporag.retrieval.bm25 import tokenize

    for tokens in tokenize(queries, compiled.stemmer):
        ids = np.asarray(compiled._term_ids(tokens))
        if ids.size:
            a, b = windowed.top_k(ids, 15), whole.top_k(ids, 15)
            assert a[0].tolist() == b[0].tolist() and _bits(a[1]) == _bits(b[1])


def test_out_of_order_postings_use_the_whole_array_loop_and_stay_exact(pair):
    """A posting list out of row order (an index bm25s did not write) is found, and scored without windows."""
    _, compiled, _, _ = pair
    model = compiled.model
    indptr, indices, data = (np.array(model.scores[name]) for name in ("indptr", "indices", "data"))
    term = int(np.argmax(np.diff(indptr)))  # the commonest term: postings in every window
    start, stop = indptr[term], indptr[term + 1]
    indices[start:stop], data[start:stop] = indices[start:stop][::-1].copy(), data[start:stop][::-1].copy()
    shuffled = type("Model", (), {"scores": {**model.scores, "indices": indices, "data": data},
                                  "nonoccurrence_array": None})()
    search = bm25_compiled.CompiledSearch(shuffled)
    ids = np.asarray([term, term + 1])
    rows, scores = search.top_k(ids, 15)
    reference = np.zeros(model.scores["num_docs"], np.float32)
    for t in ids:
        np.add.at(reference, indices[indptr[t]:indptr[t + 1]], data[indptr[t]:indptr[t + 1]])
    expected = np.lexsort((np.arange(len(reference)), -reference))[:15]
    assert rows.tolist() == expected.tolist() and _bits(scores) == _bits(reference[expected])
    assert search.score_rows(ids, np.arange(10)) is None  # row scores refuse to binary-search it


def test_score_rows_equals_full_scoring_on_the_union_without_scoring_every_passage(pair, monkeypatch):
    reference, compiled, queries, _ = pair
    union = np.unique(reference.search_many(queries[:5], 200)[0])
    union = union[union >= 0]

    def full_scoring_called(ids):
        raise AssertionError("score_rows scored every passage")

    monkeypatch.setattr(compiled, "scores_of", full_scoring_called)
    for query in queries:
        assert _bits(compiled.score_rows(query, union)) == _bits(reference.score_rows(query, union))


def test_two_stage_keeps_exact_scores_and_overlaps_the_exact_top_15(pair):
    reference, compiled, queries, directory = pair
    search = compiled.compiled
    with pytest.raises(IndexMismatchError, match="two-stage"):
        load_forward(directory, search.num_docs, len(search.indices))
    build_forward(directory, search.num_docs)
    forward = load_forward(directory, search.num_docs, len(search.indices))
    assert int(forward[0][-1]) == len(search.indices)
    two_stage = bm25_compiled.TwoStageSearch(search, forward, depth=1000)
    two_stage.long_from = 0  # every query with a rare term takes the two-stage path here, short ones too
    from hyporag.retrieval.bm25 import tokenize

    overlaps, used = [], 0
    for tokens in tokenize(queries, compiled.stemmer):
        ids = np.asarray(compiled._term_ids(tokens))
        if not ids.size:
            continue
        exact_rows, exact_scores = search.top_k(ids, 15)
        rows, scores = two_stage.top_k(ids, 15)
        used += bool((two_stage.document_frequency[ids] <= two_stage.rare_below).any())
        exact = dict(zip(exact_rows.tolist(), _bits(exact_scores), strict=True))
        assert all(exact[r] == s for r, s in zip(rows.tolist(), _bits(scores), strict=True) if r in exact)
        overlaps.append(len(set(rows.tolist()) & set(exact_rows.tolist())) / 15)
    assert used >= 30  # most queries took the two-stage path
    assert np.mean(overlaps) >= 0.95


def test_two_stage_answers_short_queries_exactly(pair, monkeypatch):
    """A query reading fewer than 2 postings per passage costs little exactly: it is searched exactly, all terms."""
    _, compiled, _, directory = pair
    search = compiled.compiled
    if not (directory.parent / "bm25-forward").is_dir():
        build_forward(directory, search.num_docs)
    two_stage = bm25_compiled.TwoStageSearch(search, load_forward(directory, search.num_docs, len(search.indices)))
    calls = []
    exact_top_k = search.top_k
    monkeypatch.setattr(search, "top_k", lambda ids, k: calls.append((ids.tolist(), k)) or exact_top_k(ids, k))
    short = np.asarray(compiled._term_ids(["term3999", "term0"]))
    assert two_stage.document_frequency[short].sum() < 2 * search.num_docs
    two_stage.top_k(short, 15)
    assert calls == [(short.tolist(), 15)]  # one exact search over every term, no first stage


def test_a_truncated_forward_index_is_refused(pair, tmp_path):
    _, compiled, _, directory = pair
    search = compiled.compiled
    if not (directory.parent / "bm25-forward").is_dir():
        build_forward(directory, search.num_docs)
    with pytest.raises(IndexMismatchError, match="does not match"):
        load_forward(directory, search.num_docs + 1, len(search.indices))


def test_without_numba_bm25_says_so_once_and_answers_the_same(pair, monkeypatch, capsys):
    reference, _, queries, directory = pair
    monkeypatch.setattr(bm25_compiled, "_WARNED", [])
    monkeypatch.setitem(sys.modules, "numba", None)  # `import numba` raises ImportError
    first, second = BM25Index.load(directory), BM25Index.load(directory)
    err = capsys.readouterr().err
    assert first.backend == second.backend == "numpy"
    assert err.count("numba is unavailable") == 1 and "np.add.at" in err
    assert first.search_many(queries, 15)[0].tolist() == reference.search_many(queries, 15)[0].tolist()


def test_an_unknown_backend_is_one_line(pair):
    from hyporag.foundation.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown BM25 backend 'cuda'"):
        BM25Index(pair[1].model, backend="cuda")


def test_a_second_process_loads_the_compiled_loops_from_the_disk_cache(tmp_path):
    """numba's cache=True: the first process compiles and writes the cache, the next one only loads it."""
    script = textwrap.dedent("""
        import time
        import numpy as np
        from hyporag.retrieval import bm25_kernels as K
        started = time.perf_counter()  # the first call compiles, or loads the compiled code from the cache
        out_rows, out_scores = np.empty(2, np.int64), np.empty(2, np.float32)
        K.search_windowed(np.array([0]), np.ones(3, np.float32), np.array([0, 3]), np.array([0, 1, 2], np.int32), 3,
                          np.float32(0), np.empty(4, np.float32), np.empty(1, np.int64), np.empty(2, np.float32),
                          np.empty(2, np.int64), out_rows, out_scores)
        assert out_rows.tolist() == [0, 1]
        print(time.perf_counter() - started)
    """)
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    seconds = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True,
                              check=True)
        seconds.append(float(done.stdout.strip()))
    assert any((tmp_path / "numba-cache").rglob("*.nbi"))  # the index files numba wrote
    assert seconds[1] < seconds[0] / 2, seconds  # loaded, not compiled again


def test_every_kernel_is_cached_on_disk_and_releases_the_gil():
    for name in ("search_windowed", "search_whole", "score_rows_sorted", "rescore_from_forward", "postings_ascending"):
        kernel = getattr(bm25_kernels, name)
        assert type(kernel._cache).__name__ == "FunctionCache" and kernel.targetoptions.get("nogil"), name
