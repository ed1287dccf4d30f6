"""bm25s's analysis (English stopwords out, PyStemmer's English stemmer), shared by every BM25 engine and the
chunked build, so that they index and query the same terms."""

from __future__ import annotations

TOKENIZER = "bm25s.tokenize(stopwords=en, PyStemmer english)"


def stemmer():
    try:
        import Stemmer
    except ImportError:  # pragma: no cover - PyStemmer is a declared dependency
        return None
    return Stemmer.Stemmer("english")


def tokenize(texts: list[str], word_stemmer) -> list[list[str]]:
    """bm25s's tokens (English stopwords out, stemmed): every engine indexes and queries these, so they share terms."""
    import bm25s

    return bm25s.tokenize(texts, stopwords="en", stemmer=word_stemmer, return_ids=False, show_progress=False)
