"""Rerank-RAG's cross-encoder, as the HCQR authors ran it (`BAAI/bge-reranker-v2-m3`): any sentence-transformers
CrossEncoder name or local path scores (query, passage) pairs and the pool is re-sorted by that score.

The model loads on first use (heavy: torch) and is shared by every copy of the program, like an open index."""

from __future__ import annotations

from hyporag.foundation.errors import ModelError
from hyporag.retrieval.hit import Hit
from hyporag.retrieval.store import passage_text


class CrossEncoderReranker:
    def __init__(self, name: str, max_length: int = 512, batch_size: int = 16):
        self.name, self.max_length, self.batch_size = name, max_length, batch_size
        self._model = None

    def __deepcopy__(self, memo: dict) -> CrossEncoderReranker:
        return self

    @property
    def model(self):
        if self._model is None:
            try:
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(self.name, max_length=self.max_length, device="cpu")
            except Exception as exc:  # not on the hub, no network, not a cross-encoder: one line
                raise ModelError(f"cross-encoder {self.name!r} cannot be loaded ({type(exc).__name__}: "
                                 f"{str(exc)[:160]})") from None
        return self._model

    def __call__(self, query: str, pool: list[Hit]) -> list[Hit]:
        if not pool:
            return []
        scores = self.model.predict([(query, passage_text(h.title, h.contents)) for h in pool],
                                    batch_size=self.batch_size, show_progress_bar=False)
        order = sorted(range(len(pool)), key=lambda i: -float(scores[i]))  # stable for equal scores
        return [Hit(pool[i].id, pool[i].title, pool[i].contents, float(scores[i])) for i in order]
