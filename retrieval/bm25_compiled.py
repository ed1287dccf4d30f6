"""BM25 search on the compiled path (retrieval/bm25_kernels.py) over a loaded bm25s index's arrays, with buffers
reused per thread: no N-sized allocation per query, and CHR's union scoring reads only the rows it scores."""

from __future__ import annotations

import sys
import threading

import numpy as np

_WARNED: list[str] = []


def numba_missing() -> str | None:
    """Why numba cannot be used here (None when it can); the reason is printed once per process by the caller."""
    try:
        import numba  # noqa: F401
    except Exception as error:  # ImportError, or numba refusing this numpy/Python
        return f"{type(error).__name__}: {error}"
    return None


def warn_numpy_fallback(reason: str) -> None:
    """One line per process: BM25 still answers, exactly, on numpy's slower path."""
    if not _WARNED:
        _WARNED.append(reason)
        print(f"hyporag: numba is unavailable ({reason}); BM25 scores with numpy's np.add.at instead (the same "
              "rankings, 2-4x slower at millions of passages)", file=sys.stderr)


class CompiledSearch:
    """Exact top-k and row scores from bm25s's CSC arrays: the windowed loop while the posting lists are in row
    order (checked as it reads them), the whole-array loop otherwise."""

    def __init__(self, model, window: int | None = None):
        from hyporag.retrieval import bm25_kernels

        self.kernels = bm25_kernels
        self.data = model.scores["data"]
        self.indptr = model.scores["indptr"]
        self.indices = model.scores["indices"]
        self.num_docs = int(model.scores["num_docs"])
        self.dtype = self.data.dtype
        self.nonoccurrence = getattr(model, "nonoccurrence_array", None)
        self.ascending = np.zeros(len(self.indptr) - 1, dtype=np.uint8)  # per term: 0 unchecked, 1 yes, 2 no
        self.window = window or bm25_kernels.WINDOW  # passages scored per window
        self.windowed = True  # False: always the whole-array loop
        self.local = threading.local()

    def _shift(self, ids: np.ndarray) -> float:
        """bm25s's score for a term's absence (BM25L/BM25+ only; 0 for the Lucene variant hyporag builds)."""
        if self.nonoccurrence is None:
            return self.dtype.type(0)
        return self.dtype.type(self.nonoccurrence[ids].sum())

    def _buffers(self, k: int, terms: int, whole: bool):
        local = self.local
        if getattr(local, "k", -1) < k:
            local.k = k
            local.heap_scores, local.heap_rows = np.empty(k, self.dtype), np.empty(k, np.int64)
        if getattr(local, "terms", -1) < terms:
            local.terms = terms
            local.cursors = np.empty(terms, np.int64)
        if whole and getattr(local, "whole", None) is None:
            local.whole = np.empty(self.num_docs, self.dtype)
        if getattr(local, "window", None) is None:
            local.window = np.empty(min(self.window, max(self.num_docs, 1)), self.dtype)
        return local

    def top_k(self, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k best rows (best first, ties by row) and their scores, exactly as bm25s scores them."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        rows, scores = np.empty(k, np.int64), np.empty(k, self.dtype)
        buffers = self._buffers(k, len(ids), whole=not self.windowed)
        shift = self._shift(ids)
        if self.windowed and self.kernels.postings_ascending(ids, self.indptr, self.indices, self.ascending):
            self.kernels.search_windowed(ids, self.data, self.indptr, self.indices, self.num_docs, shift,
                                         buffers.window, buffers.cursors, buffers.heap_scores, buffers.heap_rows,
                                         rows, scores)
            return rows, scores
        buffers = self._buffers(k, len(ids), whole=True)
        self.kernels.search_whole(ids, self.data, self.indptr, self.indices, self.num_docs, shift, buffers.whole,
                                  buffers.heap_scores, buffers.heap_rows, rows, scores)
        return rows, scores

    def score_rows(self, ids: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        """The rows' exact scores, reading only where they sit in each term's postings; None when a term's postings
        are out of row order (the caller then scores every passage)."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        if not self.kernels.postings_ascending(ids, self.indptr, self.indices, self.ascending):
            return None
        out = np.empty(len(rows), self.dtype)
        self.kernels.score_rows_sorted(ids, self.data, self.indptr, self.indices,
                                       np.ascontiguousarray(rows, dtype=np.int64), self._shift(ids), out)
        return out


RARE_SHARE = 0.05  # two-stage: terms in at most this share of passages are scored over every passage
DEPTH = 1000  # two-stage: candidates rescored exactly
LONG_QUERY = 2.0  # two-stage: only queries reading at least this many postings per passage (Σdf >= 2N); shorter
# ones cost little exactly, and the first stage's scan and rescoring would cost more (1M: 2.3 against 1.3 ms)


class TwoStageSearch:
    """Approximate top-k for long queries (docs/results/scale.md): the query's rare terms are scored over every
    passage on the windowed loop, the best DEPTH passages by that partial score are scored exactly from the forward
    index. A query with no rare term, a short query (Σdf below LONG_QUERY postings per passage), or one asking for k
    near DEPTH is answered exactly."""

    def __init__(self, exact: CompiledSearch, forward: tuple[np.ndarray, np.ndarray, np.ndarray],
                 rare_share: float = RARE_SHARE, depth: int = DEPTH):
        self.exact = exact
        self.forward_ptr, self.forward_terms, self.forward_scores = forward
        self.depth = min(depth, exact.num_docs)
        self.document_frequency = np.diff(np.asarray(exact.indptr))
        self.rare_below = rare_share * exact.num_docs
        self.long_from = LONG_QUERY * exact.num_docs
        self.local = threading.local()

    def _buffers(self, terms: int):
        local = self.local
        if getattr(local, "slots", None) is None:
            local.slots = np.full(len(self.exact.indptr) - 1, -1, np.int64)
        if getattr(local, "terms", -1) < terms:
            local.terms = terms
            local.contributions = np.empty(terms, self.exact.dtype)
        return local

    def top_k(self, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        frequencies = self.document_frequency[ids]
        rare = ids[frequencies <= self.rare_below]
        if not rare.size or k * 4 > self.depth or frequencies.sum() < self.long_from:
            return self.exact.top_k(ids, k)
        exact = self.exact
        candidates, _ = exact.top_k(rare, self.depth)  # exact on the rare terms alone; the shift does not reorder
        candidates = np.sort(candidates)  # rows ascending, so ties fall to the lower row as in a scan
        buffers = self._buffers(len(ids))
        heap = exact._buffers(k, len(ids), whole=False)
        rows, scores = np.empty(k, np.int64), np.empty(k, exact.dtype)
        found = exact.kernels.rescore_from_forward(
            ids, exact._shift(ids), self.forward_ptr, self.forward_terms, self.forward_scores, candidates,
            buffers.slots, buffers.contributions, heap.heap_scores, heap.heap_rows, rows, scores)
        return rows[:found], scores[:found]
