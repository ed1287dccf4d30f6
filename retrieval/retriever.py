"""The retriever every program searches through: BM25, dense and hybrid (RRF) modes, one scoring interface.

Programs hand it weighted queries (retrieval.query): plain text, pooled documents, contrasts. Dense scoring of a
weighted query is one query vector: with normalised embeddings Σwᵢ·sim(d, textᵢ) = d·Σwᵢêᵢ, so one FAISS search
gives the exact ranking of scoring every passage. BM25 has no such identity: each term's candidate list is
scored, min-max normalised over their union, and weighted.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hyporag.foundation.errors import ConfigError
from hyporag.retrieval.hit import Hit
from hyporag.retrieval.query import WeightedQuery
from hyporag.retrieval.store import PassageStore

MODES = ("bm25", "dense", "hybrid")


def _minmax(values: np.ndarray) -> np.ndarray:
    low, high = float(values.min()), float(values.max())
    return np.zeros_like(values) if high - low < 1e-12 else (values - low) / (high - low)


class Retriever:
    """`search(query, k)`, `search_many(queries, k)` and `search_weighted(queries, k)`: one encoder call and one
    FAISS call per batch."""

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

    # -- search: every query is weighted texts (retrieval.query), combined once per mode -------------------------
    def search(self, query: str, k: int = 15, mode: str | None = None) -> list[Hit]:
        return self.search_weighted([WeightedQuery.of(query)], k, mode)[0]

    def search_many(self, queries: Sequence[str], k: int = 15, mode: str | None = None) -> list[list[Hit]]:
        return self.search_weighted([WeightedQuery.of(q) for q in queries], k, mode)

    def encode(self, texts: Sequence[str]) -> np.ndarray | None:
        """The texts' vectors in this index's encoder (None without a dense index): a program that needs them
        (CHR's similarity of H+ and H−) encodes once and passes them on in its WeightedQuery."""
        return self.dense.encode(list(texts)) if self.dense is not None else None

    def search_weighted(self, queries: Sequence[WeightedQuery], k: int = 15,
                        mode: str | None = None) -> list[list[Hit]]:
        """Top `k` passages per query: one BM25 batch, one encoder call and one FAISS search per dense index."""
        mode = mode or self.mode
        self._check(mode)
        if not queries:
            return []
        depth = k if mode != "hybrid" else max(k, self.candidate_depth)
        lexical = self._lexical(queries, depth) if mode in ("bm25", "hybrid") else None
        if mode == "bm25":
            return [self._to_hits(rows[:k]) for rows in lexical]
        semantic = [self._semantic(dense, queries, depth, own=dense is self.dense)
                    for dense in (self.dense, *(self.extra_dense if mode == "hybrid" else ()))]
        if mode == "dense":
            return [self._to_hits(rows) for rows in semantic[0]]
        return [self._fuse([lexical[i], *(lists[i] for lists in semantic)], k) for i in range(len(queries))]

    def _semantic(self, dense, queries: Sequence[WeightedQuery], depth: int, own: bool):
        """Each query's combined vector in `dense`'s space, searched in one FAISS call."""
        missing = [q for q in queries if not (own and q.vectors is not None)]
        encoded = iter(np.split(dense.encode([t for q in missing for t in q.texts]),
                                np.cumsum([len(q.terms) for q in missing])[:-1]) if missing else ())
        combined = np.vstack([q.combine(q.vectors if own and q.vectors is not None else next(encoded))
                              for q in queries])
        return self._rows(*dense.search_vectors(combined.astype(np.float32), depth))

    def _lexical(self, queries: Sequence[WeightedQuery], depth: int) -> list[list[tuple[int, float]]]:
        """BM25 rows per query: plain texts in one batch; weighted ones by normalised scores over their union."""
        out: list[list[tuple[int, float]]] = [[] for _ in queries]
        plain = [(i, q.plain) for i, q in enumerate(queries) if q.plain is not None]
        if plain:
            batched = self._rows(*self.bm25.search_many([text for _, text in plain], depth), drop_zero=True)
            for (i, _), rows in zip(plain, batched, strict=True):
                out[i] = rows
        for i, query in enumerate(queries):
            if query.plain is None:  # a weighted score reorders candidates: always draw them deep
                out[i] = self._weighted_bm25_rows(query, max(depth, self.candidate_depth))
        return out

    def _weighted_bm25_rows(self, query: WeightedQuery, depth: int) -> list[tuple[int, float]]:
        rows, scores = self.bm25.search_many(query.texts, depth)
        union = np.unique(rows[(rows >= 0) & (scores > 0)])  # candidates: any term's real matches
        if union.size == 0:
            return []
        combined = sum(weight * _minmax(self.bm25.score_rows(text, union)) for text, weight in query.terms)
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
