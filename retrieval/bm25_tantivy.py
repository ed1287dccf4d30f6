"""BM25 on tantivy (Rust, memory-mapped segments, block-max WAND): the engine for large indexes.

Passages are indexed as the very tokens hyporag's bm25s index holds (bm25s's tokenizer, its English stopwords,
PyStemmer's English stemmer), joined by spaces and split again by tantivy's whitespace tokenizer, so both engines
see the same terms and the same document lengths. What still differs is tantivy's own BM25: k1 is fixed at 1.2
(bm25s: 1.5), and document lengths are kept in one lossy byte, so near-ties can swap; docs/results/scale.md measures
what that does to the top 15 and to accuracy. Searches never count all matches (`count=False`), which is what lets
tantivy skip postings that cannot reach the top k.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from hyporag.foundation.errors import ConfigError
from hyporag.retrieval.bm25_tokens import stemmer, tokenize

TOKENS_FIELD, ROW_FIELD = "tokens", "row"
WRITER_HEAP = 1 << 30  # bytes of indexing buffer over all writer threads (fewer, larger segments)


def _tantivy():
    try:
        import tantivy
    except ImportError:  # a declared dependency; a broken environment still gets a line, not a traceback
        raise ConfigError("the tantivy BM25 engine needs the `tantivy` package: pip install 'tantivy>=0.27'") from None
    return tantivy


class TantivyBM25Index:
    """A tantivy index over the passage store's rows with `BM25Index`'s interface (`search_many`, `score_rows`)."""

    ENGINE = "tantivy"
    K1, B = 1.2, 0.75  # tantivy's constants (not settable); recorded in the manifest

    def __init__(self, index) -> None:
        self.index = index
        self.searcher = index.searcher()
        self.schema = index.schema
        self.stemmer = stemmer()
        self.size = int(self.searcher.num_docs)

    @classmethod
    def build_in_chunks(cls, batches: Iterable[list[str]], directory: str | Path, show_progress: bool = True,
                        threads: int = 2) -> TantivyBM25Index:
        """Index every batch's texts, row numbers in order; one batch of token lists in memory at a time."""
        from tqdm import tqdm


        tantivy = _tantivy()
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        builder = tantivy.SchemaBuilder()
        builder.add_integer_field(ROW_FIELD, stored=False, indexed=True, fast=True)
        builder.add_text_field(TOKENS_FIELD, stored=False, tokenizer_name="whitespace", index_option="freq")
        index = tantivy.Index(builder.build(), path=str(directory))
        writer = index.writer(heap_size=WRITER_HEAP, num_threads=threads)
        row, word_stemmer = 0, stemmer()
        for texts in tqdm(batches, desc="bm25 (tantivy)", unit="batch", disable=not show_progress):
            for tokens in tokenize(texts, word_stemmer):
                writer.add_document(tantivy.Document(**{ROW_FIELD: row, TOKENS_FIELD: " ".join(tokens)}))
                row += 1
        writer.commit()
        writer.wait_merging_threads()
        return cls.load(directory)

    @classmethod
    def load(cls, directory: str | Path) -> TantivyBM25Index:
        return cls(_tantivy().Index.open(str(directory)))

    def _query(self, tokens: list[str]):
        """A disjunction of the query's terms; a repeated term counts once per occurrence, as in bm25s."""
        tantivy = _tantivy()
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, TOKENS_FIELD, t)) for t in tokens])

    def _hits(self, query, limit: int) -> tuple[list[int], list[float]]:
        hits = self.searcher.search(query, limit, count=False).hits
        if not hits:
            return [], []
        return self.searcher.fast_field_values(ROW_FIELD, [a for _, a in hits]), [s for s, _ in hits]

    def search_many(self, queries: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows and scores per query, best first; a query with no indexable term gets row -1 and score 0."""

        k = min(k, self.size)
        rows = np.full((len(queries), k), -1, dtype=np.int64)
        scores = np.zeros((len(queries), k), dtype=np.float32)
        for i, tokens in enumerate(tokenize(list(queries), self.stemmer)):
            if tokens:
                found, values = self._hits(self._query(tokens), k)
                rows[i, :len(found)], scores[i, :len(found)] = found, values
        return rows, scores

    def score_rows(self, query: str, rows: np.ndarray) -> np.ndarray:
        """BM25 scores of one query against given rows (CHR's candidate union): the query restricted to those rows
        by a zero-scoring filter, so each row's score is the one a search gives it; a row no term matches gets 0."""

        tantivy = _tantivy()
        out = np.zeros(len(rows), dtype=np.float32)
        tokens = tokenize([query], self.stemmer)[0]
        if not tokens or len(rows) == 0:
            return out
        only_rows = tantivy.Query.const_score_query(
            tantivy.Query.term_set_query(self.schema, ROW_FIELD, [int(r) for r in rows]), 0.0)
        query_on_rows = tantivy.Query.boolean_query([(tantivy.Occur.Must, self._query(tokens)),
                                                     (tantivy.Occur.Must, only_rows)])
        found, values = self._hits(query_on_rows, len(rows))
        position = {int(r): i for i, r in enumerate(rows)}
        for row, value in zip(found, values, strict=True):
            out[position[row]] = value
        return out
