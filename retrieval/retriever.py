"""The retriever every program searches through: BM25, dense, hybrid (RRF) and contrastive (CHR) modes.

Contrastive dense scoring is one query vector: with normalised embeddings sim(d,H+) − λ·sim(d,H−) = d·(ĥ+ − λĥ−),
so one FAISS search gives the exact ranking of scoring every passage. BM25 has no such identity: both hypotheses'
candidate lists (depth `candidate_depth`) are scored, min-max normalised over their union, and subtracted.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hyporag.errors import ConfigError
from hyporag.retrieval.hit import Hit
from hyporag.retrieval.store import PassageStore

MODES = ("bm25", "dense", "hybrid")


def _pooled(dense, texts: Sequence[str]) -> np.ndarray:
    """The renormalised mean of the texts' vectors (HyDE's one query), in `dense`'s space."""
    mean = dense.encode(list(texts)).mean(axis=0)
    return (mean / max(float(np.linalg.norm(mean)), 1e-12))[None, :]


def _minmax(values: np.ndarray) -> np.ndarray:
    low, high = float(values.min()), float(values.max())
    return np.zeros_like(values) if high - low < 1e-12 else (values - low) / (high - low)


class Retriever:
    """`search(query, k)`, `search_many(queries, k)` (one encoder call, one FAISS call) and `search_contrastive`."""

    def __init__(self, store: PassageStore, bm25=None, dense=None, mode: str | None = None, rrf_k: int = 60,
                 candidate_depth: int = 100, fingerprint: str = ""):
        if bm25 is None and dense is None:
            raise ConfigError("a retriever needs a BM25 index, a dense index, or both")
        self.store, self.bm25, self.dense = store, bm25, dense
        self.mode = mode or ("hybrid" if bm25 is not None and dense is not None else "dense" if dense else "bm25")
        self.rrf_k = rrf_k
        self.candidate_depth = candidate_depth
        self.fingerprint = fingerprint
        self.extra_dense: list = []  # more dense indexes over the same rows (other encoders), fused in hybrid mode
        self._check(self.mode)

    def fuse_with(self, others: Sequence[Retriever]) -> None:
        """Fuse the dense side of other indexes of the same corpus into hybrid search (MedRAG fuses four
        retrievers by RRF); their rows are this store's rows, which the fingerprint and count guarantee."""
        for other in others:
            if other.fingerprint != self.fingerprint or other.store.count != self.store.count:
                raise ConfigError(f"{getattr(other, 'directory', 'an index')}: not an index of this corpus "
                                  f"({other.store.count} passages, fingerprint {other.fingerprint[:12]}...); only "
                                  "indexes of one corpus can be fused")
            if other.dense is None:
                raise ConfigError(f"{getattr(other, 'directory', 'an index')}: has no dense part to fuse")
            self.extra_dense.append(other.dense)

    def __deepcopy__(self, memo: dict) -> Retriever:
        """Shared, not copied: DSPy deep-copies a program for every teleprompter candidate, and an open index
        (memory-mapped BM25, FAISS, SQLite) is read-only state that must not be duplicated per candidate."""
        return self

    def _check(self, mode: str) -> None:
        if mode not in MODES:
            raise ConfigError(f"unknown retrieval mode {mode!r}: use one of {', '.join(MODES)}")
        if mode in ("bm25", "hybrid") and self.bm25 is None:
            raise ConfigError(f"mode {mode!r} needs a BM25 index; rebuild with --retriever bm25 or both")
        if mode in ("dense", "hybrid") and self.dense is None:
            raise ConfigError(f"mode {mode!r} needs a dense index; rebuild with --retriever dense or both")

    # -- plain search -------------------------------------------------------------------------------------------
    def search(self, query: str, k: int = 15, mode: str | None = None) -> list[Hit]:
        return self.search_many([query], k, mode)[0]

    def search_many(self, queries: Sequence[str], k: int = 15, mode: str | None = None) -> list[list[Hit]]:
        mode = mode or self.mode
        self._check(mode)
        if not queries:
            return []
        if mode == "bm25":
            return self._hits(*self.bm25.search_many(queries, k), drop_zero=True)
        if mode == "dense":
            return self._hits(*self.dense.search_vectors(self.dense.encode(list(queries)), k))
        depth = max(k, self.candidate_depth)
        lists = [self._rows(*self.bm25.search_many(queries, depth), drop_zero=True)]
        for dense in (self.dense, *self.extra_dense):
            lists.append(self._rows(*dense.search_vectors(dense.encode(list(queries)), depth)))
        return [self._fuse(list(per_query), k) for per_query in zip(*lists, strict=True)]

    def search_pooled(self, texts: Sequence[str], k: int = 15, mode: str | None = None) -> list[Hit]:
        """One search for several texts (HyDE): the renormalised mean vector for dense, the joined text for BM25."""
        mode = mode or self.mode
        self._check(mode)
        if mode == "bm25":
            return self.search(" ".join(texts), k, mode="bm25")
        mean = _pooled(self.dense, texts)
        if mode == "dense":
            return self._hits(*self.dense.search_vectors(mean, k))[0]
        depth = max(k, self.candidate_depth)
        lexical = self._rows(*self.bm25.search_many([" ".join(texts)], depth), drop_zero=True)[0]
        semantic = [self._rows(*self.dense.search_vectors(mean, depth))[0]]
        for dense in self.extra_dense:  # each encoder pools its own vectors
            semantic.append(self._rows(*dense.search_vectors(_pooled(dense, texts), depth))[0])
        return self._fuse([lexical, *semantic], k)

    # -- contrastive (CHR) --------------------------------------------------------------------------------------
    def hypothesis_vectors(self, h_plus: str, h_minus: str) -> np.ndarray | None:
        """ĥ+ and ĥ− in one encoder call (None without a dense index); pass them on to avoid encoding twice."""
        return self.dense.encode([h_plus, h_minus]) if self.dense is not None else None

    def hypothesis_similarity(self, h_plus: str, h_minus: str, vectors: np.ndarray | None = None) -> float:
        """cos(ĥ+, ĥ−) from the given vectors, or token Jaccard without them (BM25, no encoder call)."""
        if vectors is not None:
            a, b = vectors
            return float(np.dot(a, b))
        tokens_a, tokens_b = set(h_plus.lower().split()), set(h_minus.lower().split())
        return len(tokens_a & tokens_b) / max(1, len(tokens_a | tokens_b))

    def contrastive_vector(self, h_plus: str, h_minus: str, lam: float,
                           vectors: np.ndarray | None = None, dense=None) -> np.ndarray:
        """ĥ+ − λĥ− in the space of `dense` (default this index's own encoder)."""
        if vectors is None:
            vectors = (dense or self.dense).encode([h_plus, h_minus])
        a, b = vectors
        return (a - lam * b)[None, :]

    def search_contrastive(self, h_plus: str, h_minus: str, lam: float = 1.0, k: int = 15,
                           mode: str | None = None, vectors: np.ndarray | None = None) -> list[Hit]:
        mode = mode or self.mode
        self._check(mode)
        if mode == "dense":
            query = self.contrastive_vector(h_plus, h_minus, lam, vectors)
            return self._hits(*self.dense.search_vectors(query, k))[0]
        depth = max(k, self.candidate_depth)
        lexical = self._bm25_contrastive_rows(h_plus, h_minus, lam, depth)
        if mode == "bm25":
            rows, scores = zip(*lexical[:k], strict=True) if lexical else ((), ())
            return self._hits(np.array([rows]), np.array([scores]))[0]
        query = self.contrastive_vector(h_plus, h_minus, lam, vectors)
        semantic = [self._rows(*self.dense.search_vectors(query, depth))[0]]
        for dense in self.extra_dense:  # the same contrast in each encoder's own space
            extra = self.contrastive_vector(h_plus, h_minus, lam, dense=dense)
            semantic.append(self._rows(*dense.search_vectors(extra, depth))[0])
        return self._fuse([lexical, *semantic], k)

    def _bm25_contrastive_rows(self, h_plus: str, h_minus: str, lam: float, depth: int) -> list[tuple[int, float]]:
        rows, scores = self.bm25.search_many([h_plus, h_minus], depth)
        union = np.unique(rows[(rows >= 0) & (scores > 0)])  # candidates: either hypothesis's real matches
        if union.size == 0:
            return []
        plus = _minmax(self.bm25.score_rows(h_plus, union))
        minus = _minmax(self.bm25.score_rows(h_minus, union))
        combined = plus - lam * minus
        order = np.argsort(-combined, kind="stable")
        return [(int(union[i]), float(combined[i])) for i in order]

    # -- helpers ------------------------------------------------------------------------------------------------
    def _rows(self, rows: np.ndarray, scores: np.ndarray, drop_zero: bool = False) -> list[list[tuple[int, float]]]:
        out = []
        for row_list, score_list in zip(rows, scores, strict=True):
            out.append([(int(r), float(s)) for r, s in zip(row_list, score_list, strict=True)
                        if r >= 0 and not (drop_zero and s <= 0)])
        return out

    def _hits(self, rows: np.ndarray, scores: np.ndarray, drop_zero: bool = False) -> list[list[Hit]]:
        return [self._to_hits(r) for r in self._rows(rows, scores, drop_zero)]

    def _to_hits(self, ranked: list[tuple[int, float]]) -> list[Hit]:
        passages = self.store.get([row for row, _ in ranked])
        return [Hit(p.id, p.title, p.contents, score) for p, (_, score) in zip(passages, ranked, strict=True)]

    def _fuse(self, ranked_lists: list[list[tuple[int, float]]], k: int) -> list[Hit]:
        """Reciprocal-rank fusion: score(d) = Σ 1/(rrf_k + rank)."""
        fused: dict[int, float] = {}
        for ranked in ranked_lists:
            for rank, (row, _) in enumerate(ranked, start=1):
                fused[row] = fused.get(row, 0.0) + 1.0 / (self.rrf_k + rank)
        top = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]
        return self._to_hits(top)
