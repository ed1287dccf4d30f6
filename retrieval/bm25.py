"""Lexical retrieval over a bm25s index (sparse matrices, memory-mapped load), searched on a compiled path."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hyporag.foundation.errors import ConfigError
from hyporag.retrieval.bm25_chunked import build_chunked
from hyporag.retrieval.bm25_compiled import CompiledSearch, TwoStageSearch, numba_missing, warn_numpy_fallback
from hyporag.retrieval.bm25_forward import load_forward
from hyporag.retrieval.bm25_tokens import TOKENIZER, stemmer, tokenize  # noqa: F401 - TOKENIZER: public here too

SEARCHES = ("exact", "two-stage")
BLOCK = 1024  # rows per block of the top-k selection


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best rows, best first (ties by row), without sorting all n scores: the k-th largest of the 1024-row
    blocks' maxima is at most the k-th largest score (k maxima are at least it), so the blocks whose maximum reaches
    it hold every top-k row, ties included. Among those ~1024·k rows, only the ones scoring at least their own k-th
    largest (ties kept) are sorted. ~0.3 ms at 71k rows and ~3 ms at 5M, against ~10 ms for a full partition."""
    n = len(scores)
    if n <= 4 * BLOCK * k:
        candidates = np.arange(n)
    else:
        whole = n - n % BLOCK
        maxima = scores[:whole].reshape(-1, BLOCK).max(axis=1)
        kth = np.partition(maxima, len(maxima) - k)[len(maxima) - k]
        blocks = np.flatnonzero(maxima >= kth)  # with ties, every block that may hold a tied row
        candidates = np.concatenate([(blocks[:, None] * BLOCK + np.arange(BLOCK)).ravel(), np.arange(whole, n)])
    values = scores[candidates]
    if len(candidates) > k:
        floor = np.partition(values, len(values) - k)[len(values) - k]
        keep = values >= floor  # the top k and every row tied with the k-th: ties are then broken by row
        candidates, values = candidates[keep], values[keep]
    picked = candidates[np.lexsort((candidates, -values))[:k]]
    return picked, scores[picked]


class BM25Index:
    """A bm25s index over the passage store's rows; `search_many` returns (rows, scores) arrays."""

    DIRNAME = "bm25"
    ENGINE = "bm25s"  # recorded in the manifest: an index another engine built is refused, not misread
    K1, B = 1.5, 0.75  # bm25s's defaults (MedRAG's Pyserini searcher uses Anserini's 0.9, 0.4); in the manifest

    BACKENDS = ("numba", "numpy")

    def __init__(self, model, backend: str = "numba", forward: tuple | None = None, **tuning: Any):
        """`numba` (the default) scores on the compiled path (retrieval/bm25_compiled.py); `numpy` is bm25s's
        np.add.at, kept as the reference the compiled path is tested against and as the fallback, announced on
        stderr, where numba cannot be imported. With `forward` (the forward index's arrays) searches are two-stage
        (approximate, see TwoStageSearch); `score_rows` stays exact. `tuning` (window, rare_share, depth) is for
        benchmarks: the defaults are the measured ones (docs/results/scale.md)."""
        if backend not in self.BACKENDS:
            raise ConfigError(f"unknown BM25 backend {backend!r}: use one of {', '.join(self.BACKENDS)}")
        self.model = model
        self.stemmer = stemmer()
        self.size = int(model.scores["num_docs"])
        self.compiled = None
        if backend == "numba":
            missing = numba_missing()
            if missing is None:
                self.compiled = CompiledSearch(model, window=tuning.get("window"))
            else:
                warn_numpy_fallback(missing)
        self.backend = "numba" if self.compiled is not None else "numpy"
        self.two_stage = None
        if forward is not None:
            if self.compiled is None:
                raise ConfigError("the two-stage BM25 search runs on the compiled path and numba is unavailable; "
                                  "search with --bm25-search exact")
            self.two_stage = TwoStageSearch(self.compiled, forward, **{k: v for k, v in tuning.items()
                                                                         if k in ("rare_share", "depth")})
        self.search = "two-stage" if self.two_stage is not None else "exact"

    @classmethod
    def build(cls, texts: Sequence[str], directory: str | Path, k1: float = 1.5, b: float = 0.75,
              show_progress: bool = True) -> BM25Index:
        import bm25s

        tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=stemmer(), show_progress=show_progress)
        model = bm25s.BM25(k1=k1, b=b)
        model.index(tokens, show_progress=show_progress)
        model.save(str(directory))
        return cls(model)

    @classmethod
    def build_in_chunks(cls, batches: Iterable[list[str]], directory: str | Path, k1: float = 1.5, b: float = 0.75,
                        show_progress: bool = True) -> BM25Index:
        """The same index as `build` (bm25s's files and scores) with one batch of texts in memory at a time."""

        build_chunked(batches, Path(directory), stemmer(), k1, b, progress=show_progress)
        return cls.load(directory)

    @classmethod
    def load(cls, directory: str | Path, backend: str = "numba", search: str = "exact", **tuning: Any) -> BM25Index:
        """`search`: exact, or two-stage (needs the forward index `index build --bm25-search two-stage` writes)."""
        import bm25s

        if search not in SEARCHES:
            raise ConfigError(f"unknown BM25 search {search!r}: use one of {', '.join(SEARCHES)}")
        model = bm25s.BM25.load(str(directory), mmap=True, show_progress=False)
        forward = None
        if search == "two-stage":
            forward = load_forward(Path(directory), int(model.scores["num_docs"]), len(model.scores["indices"]))
        return cls(model, backend=backend, forward=forward, **tuning)

    def search_many(self, queries: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows and scores per query; a query with no indexable term (only stopwords, say) gets row -1 and
        score 0, which callers drop. Scores are bm25s's own arithmetic (bit-identical on either
        backend), the top k exact with ties by row."""
        k = min(k, self.size)
        tokens = tokenize(list(queries), self.stemmer)
        rows = np.full((len(tokens), k), -1, dtype=np.int64)
        scores = np.zeros((len(tokens), k), dtype=np.float32)
        for i, query_tokens in enumerate(tokens):
            ids = self._term_ids(query_tokens)
            if not ids:  # bm25s cannot score an empty token list
                continue
            if self.two_stage is not None:
                found_rows, found_scores = self.two_stage.top_k(np.asarray(ids), k)
                rows[i, :len(found_rows)], scores[i, :len(found_rows)] = found_rows, found_scores
            elif self.compiled is not None:
                rows[i], scores[i] = self.compiled.top_k(np.asarray(ids), k)
            else:
                rows[i], scores[i] = top_k(self.scores_of(ids), k)
        return rows, scores

    def postings(self, query: str) -> int:
        """Σdf: how many postings an exhaustive search of `query` reads (its terms' document frequencies, a repeated
        term counted each time), the work the compiled loop's time is proportional to."""
        indptr = self.model.scores["indptr"]
        return int(sum(indptr[i + 1] - indptr[i] for i in self._term_ids(tokenize([query], self.stemmer)[0])))

    def _term_ids(self, tokens: list[str]) -> list[int]:
        """The index's ids of a query's tokens; a token the corpus never used scores nothing and is dropped."""
        return [self.model.vocab_dict[t] for t in tokens if t in self.model.vocab_dict]

    def scores_of(self, ids: list[int]) -> np.ndarray:
        """Every passage's BM25 score for these term ids: bm25s's own `get_scores_from_ids` (np.add.at term by
        term). It replaced a gather-add loop of ours once numpy 2's np.add.at fast path made it 1.7-4x faster."""
        return self.model.get_scores_from_ids(ids)

    def score_rows(self, query: str, rows: np.ndarray) -> np.ndarray:
        """BM25 scores of one query against given rows (for contrastive scoring over a candidate union)."""
        ids = self._term_ids(tokenize([query], self.stemmer)[0])
        if not ids:
            return np.zeros(len(rows), dtype=np.float32)
        if self.compiled is not None:
            scored = self.compiled.score_rows(np.asarray(ids), np.asarray(rows))
            if scored is not None:
                return np.asarray(scored, dtype=np.float32)
        return np.asarray(self.scores_of(ids), dtype=np.float32)[rows]
