"""A query as weighted texts: the one thing every program hands the retriever.

A plain query is one text of weight 1; HyDE's pooled documents are n texts of weight 1/n; a contrast is
H+ at 1 and H− at −λ; option-contrast is one option's query at 1 and the other options' at −λ/(n−1). The
retriever combines the terms once per mode: dense scores d·Σwᵢêᵢ (one vector, one FAISS search: with normalised
embeddings that is Σwᵢ·sim(d, textᵢ) exactly); BM25 scores Σwᵢ·minmax(bm25(textᵢ)) over the terms' candidates
(BM25 has no vector identity), or reads the texts joined as one query when `joined_lexical`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class WeightedQuery:
    terms: tuple[tuple[str, float], ...]
    joined_lexical: bool = False  # BM25 reads the texts as one joined query (HyDE) instead of weighting scores
    unit: bool = False  # the combined vector is renormalised (HyDE's mean: its scores stay cosines)
    vectors: np.ndarray | None = field(default=None, compare=False)  # the terms' vectors, if already encoded

    @classmethod
    def of(cls, text: str) -> WeightedQuery:
        return cls(((text, 1.0),))

    @classmethod
    def mean(cls, texts: Sequence[str]) -> WeightedQuery:
        """The texts pooled: their renormalised mean vector, and their joined text for BM25."""
        return cls(tuple((t, 1.0 / len(texts)) for t in texts), joined_lexical=True, unit=True)

    @classmethod
    def difference(cls, plus: str, minus: Sequence[str] | str, lam: float,
                   vectors: np.ndarray | None = None) -> WeightedQuery:
        """`plus` minus λ times the mean of `minus` (one text or several)."""
        minus = [minus] if isinstance(minus, str) else list(minus)
        return cls(((plus, 1.0), *((m, -lam / len(minus)) for m in minus)), vectors=vectors)

    @property
    def texts(self) -> list[str]:
        return [text for text, _ in self.terms]

    @property
    def weights(self) -> np.ndarray:
        return np.array([weight for _, weight in self.terms], dtype=np.float32)

    @property
    def plain(self) -> str | None:
        """The one text BM25 searches as is (a single positive term, or the joined texts); None: weighted."""
        if self.joined_lexical:
            return " ".join(self.texts)
        if len(self.terms) == 1 and self.terms[0][1] > 0:
            return self.terms[0][0]
        return None

    def combine(self, vectors: np.ndarray) -> np.ndarray:
        """Σ wᵢ·vᵢ (renormalised when `unit`), as a (1, d) query."""
        combined = (self.weights[:, None] * vectors).sum(axis=0)
        if self.unit:
            combined = combined / max(float(np.linalg.norm(combined)), 1e-12)
        return combined[None, :]
