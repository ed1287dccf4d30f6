"""Lexical retrieval with bm25s (sparse matrices, memory-mapped load): ~100x+ faster than rank_bm25 per query."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

TOKENIZER = "bm25s.tokenize(stopwords=en, PyStemmer english)"


def _stemmer():
    try:
        import Stemmer
    except ImportError:  # pragma: no cover - PyStemmer is a declared dependency
        return None
    return Stemmer.Stemmer("english")


class BM25Index:
    """A bm25s index over the passage store's rows; `search_many` returns (rows, scores) arrays."""

    DIRNAME = "bm25"

    def __init__(self, model):
        self.model = model
        self.stemmer = _stemmer()
        self.size = int(model.scores["num_docs"])

    @classmethod
    def build(cls, texts: Sequence[str], directory: str | Path, k1: float = 1.5, b: float = 0.75,
              show_progress: bool = True) -> BM25Index:
        import bm25s

        tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=_stemmer(), show_progress=show_progress)
        model = bm25s.BM25(k1=k1, b=b)
        model.index(tokens, show_progress=show_progress)
        model.save(str(directory))
        return cls(model)

    @classmethod
    def build_in_chunks(cls, batches: Iterable[list[str]], directory: str | Path, k1: float = 1.5, b: float = 0.75,
                        show_progress: bool = True) -> BM25Index:
        """The same index as `build` (bm25s's files and scores) with one batch of texts in memory at a time."""
        from hyporag.retrieval.bm25_chunked import build_chunked

        build_chunked(batches, Path(directory), _stemmer(), k1, b, progress=show_progress)
        return cls.load(directory)

    @classmethod
    def load(cls, directory: str | Path) -> BM25Index:
        import bm25s

        return cls(bm25s.BM25.load(str(directory), mmap=True, show_progress=False))

    def search_many(self, queries: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows and scores per query; a query with no indexable term (only stopwords, say) gets row -1 and
        score 0, which callers drop."""
        import bm25s

        k = min(k, self.size)
        tokens = bm25s.tokenize(list(queries), stopwords="en", stemmer=self.stemmer, return_ids=False,
                                show_progress=False)
        rows = np.full((len(tokens), k), -1, dtype=np.int64)
        scores = np.zeros((len(tokens), k), dtype=np.float32)
        searchable = [i for i, t in enumerate(tokens) if t]
        if searchable:  # bm25s cannot score an empty token list
            found, found_scores = self.model.retrieve([tokens[i] for i in searchable], k=k, show_progress=False,
                                                      n_threads=1)
            rows[searchable], scores[searchable] = found, found_scores
        return rows, scores

    def score_rows(self, query: str, rows: np.ndarray) -> np.ndarray:
        """BM25 scores of one query against given rows (for contrastive scoring over a candidate union)."""
        import bm25s

        tokens = bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, return_ids=False, show_progress=False)
        ids = [self.model.vocab_dict[t] for t in tokens[0] if t in self.model.vocab_dict]
        if not ids:
            return np.zeros(len(rows), dtype=np.float32)
        return np.asarray(self.model.get_scores_from_ids(ids), dtype=np.float32)[rows]
