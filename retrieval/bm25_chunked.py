"""BM25 built in chunks, for corpora whose token lists do not fit in RAM, written in bm25s's own file format (so
`BM25Index.load` memory-maps it like any other and scores are bm25s's, to the float).

Pass 1 tokenizes a batch at a time, keeps the global vocabulary, document frequencies and lengths, and spills each
batch's (document, term, tf) triples to disk. Pass 2 scores them with the global idf and average length (Lucene's
BM25, bm25s's default) and places them column by column into memory-mapped CSC arrays. Peak memory is one batch
plus the vocabulary, whatever the corpus size.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from hyporag.retrieval.bm25_tokens import tokenize


def build_chunked(batches: Iterable[list[str]], directory: Path, stemmer, k1: float = 1.5, b: float = 0.75,
                  progress: bool = True) -> int:
    """Write a bm25s index of all batches' texts into `directory`; returns the number of documents."""
    import bm25s
    from tqdm import tqdm

    directory.mkdir(parents=True, exist_ok=True)
    spill = directory / "spill"
    spill.mkdir(exist_ok=True)
    vocab: dict[str, int] = {}
    df = np.zeros(1 << 16, dtype=np.int64)
    lengths: list[np.ndarray] = []
    documents, chunks = 0, 0
    for texts in tqdm(batches, desc="bm25 pass 1 (tokenize)", unit="batch", disable=not progress):
        doc_ids, term_ids, counts, doc_lengths = [], [], [], np.zeros(len(texts), dtype=np.int32)
        for offset, tokens in enumerate(tokenize(texts, stemmer)):
            ids = np.fromiter((vocab.setdefault(t, len(vocab)) for t in tokens), dtype=np.int64, count=len(tokens))
            doc_lengths[offset] = len(ids)
            unique, tf = np.unique(ids, return_counts=True)
            doc_ids.append(np.full(len(unique), documents + offset, dtype=np.int32))
            term_ids.append(unique)
            counts.append(tf.astype(np.int32))
        if len(vocab) > len(df):
            df = np.concatenate([df, np.zeros(max(len(vocab) - len(df), len(df)), dtype=np.int64)])
        terms = np.concatenate(term_ids) if term_ids else np.zeros(0, dtype=np.int64)
        np.add.at(df, terms, 1)
        np.savez(spill / f"{chunks:06d}.npz", docs=np.concatenate(doc_ids) if doc_ids else np.zeros(0, np.int32),
                 terms=terms, tf=np.concatenate(counts) if counts else np.zeros(0, np.int32))
        lengths.append(doc_lengths)
        documents += len(texts)
        chunks += 1
    df = df[:len(vocab)]
    doc_length = np.concatenate(lengths).astype(np.float32) if lengths else np.zeros(0, np.float32)
    average = float(doc_length.mean()) if documents else 1.0
    idf = np.log(1 + (documents - df + 0.5) / (df + 0.5)).astype(np.float32)  # Lucene's idf
    indptr = np.concatenate([[0], np.cumsum(df)]).astype(np.int64)
    nnz = int(indptr[-1])
    data = np.lib.format.open_memmap(directory / "data.csc.index.npy", mode="w+", dtype=np.float32, shape=(nnz,))
    indices = np.lib.format.open_memmap(directory / "indices.csc.index.npy", mode="w+", dtype=np.int32,
                                        shape=(nnz,))
    cursor = indptr[:-1].copy()
    for number in tqdm(range(chunks), desc="bm25 pass 2 (score)", unit="batch", disable=not progress):
        with np.load(spill / f"{number:06d}.npz") as part:
            docs, terms, tf = part["docs"], part["terms"], part["tf"].astype(np.float32)
        norm = k1 * (1 - b + b * doc_length[docs] / average)
        scores = idf[terms] * tf / (tf + norm)
        order = np.argsort(terms, kind="stable")  # documents stay ascending within a term
        terms, docs, scores = terms[order], docs[order], scores[order]
        starts = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]])
        rank = np.arange(len(terms)) - np.repeat(starts, np.diff(np.r_[starts, len(terms)]))
        positions = cursor[terms] + rank
        data[positions], indices[positions] = scores, docs
        np.add.at(cursor, terms[starts], np.diff(np.r_[starts, len(terms)]))
    data.flush()
    indices.flush()
    del data, indices
    np.save(directory / "indptr.csc.index.npy", indptr)
    vocab[""] = len(vocab)  # bm25s keeps an empty token last, outside the matrix
    (directory / "vocab.index.json").write_text(json.dumps(vocab, ensure_ascii=False))
    params = {"k1": k1, "b": b, "delta": 0.5, "method": "lucene", "idf_method": "lucene", "dtype": "float32",
              "int_dtype": "int32", "num_docs": documents, "version": bm25s.__version__, "backend": "numpy"}
    (directory / "params.index.json").write_text(json.dumps(params, indent=4))
    shutil.rmtree(spill)
    return documents
