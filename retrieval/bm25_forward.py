"""The forward BM25 index (passage -> its terms and their BM25 scores) that the two-stage search rescores from:
the transpose of bm25s's term -> passages arrays, written at index time into its own part of the index
(`bm25-forward/`, memory-mapped, as large as the inverted index itself: 8 bytes per posting)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from hyporag.foundation.errors import IndexMismatchError

DIRNAME = "bm25-forward"  # beside the index's bm25/ folder
FILES = ("ptr.npy", "terms.npy", "scores.npy")
TERMS_PER_PASS = 1 << 15  # vocabulary terms per fill pass (only progress granularity: the writes are mmapped)


def forward_bytes(postings: int, passages: int) -> int:
    """Disk (and page cache) the forward index needs: a term id and a score per posting, a pointer per passage."""
    return postings * 8 + (passages + 1) * 8


def build_forward(bm25_directory: Path, passages: int, progress=None) -> Path:
    """Write the forward index beside bm25_directory (an index's bm25/) from the bm25s arrays there, in a staging
    folder renamed into place, so an interrupted build leaves no forward index that looks whole."""
    from hyporag.retrieval import bm25_kernels

    directory = Path(bm25_directory)
    data = np.load(directory / "data.csc.index.npy", mmap_mode="r")
    indices = np.load(directory / "indices.csc.index.npy", mmap_mode="r")
    indptr = np.load(directory / "indptr.csc.index.npy", mmap_mode="r")
    counts = np.zeros(passages, dtype=np.int64)
    bm25_kernels.count_per_row(indices, counts)
    pointers = np.zeros(passages + 1, dtype=np.int64)
    np.cumsum(counts, out=pointers[1:])
    staging = directory.parent / f"{DIRNAME}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        np.save(staging / "ptr.npy", pointers)
        terms = np.lib.format.open_memmap(staging / "terms.npy", mode="w+", dtype=np.int32, shape=(len(indices),))
        scores = np.lib.format.open_memmap(staging / "scores.npy", mode="w+", dtype=data.dtype, shape=(len(indices),))
        cursors = pointers[:-1].copy()
        vocabulary = len(indptr) - 1
        for start in range(0, vocabulary, TERMS_PER_PASS):
            bm25_kernels.fill_forward(indptr, indices, data, start, min(start + TERMS_PER_PASS, vocabulary), cursors,
                                      terms, scores)
            if progress is not None:
                progress(min(start + TERMS_PER_PASS, vocabulary), vocabulary)
        terms.flush()
        scores.flush()
        del terms, scores
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    final = directory.parent / DIRNAME
    if final.exists():  # a rebuild (--force): the old copy is derived data, replaced whole
        shutil.rmtree(final)
    staging.rename(final)
    return final


def load_forward(bm25_directory: Path, passages: int, postings: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The forward index's arrays, memory-mapped; one that does not match the inverted index is refused."""
    directory = Path(bm25_directory).parent / DIRNAME
    missing = [name for name in FILES if not (directory / name).is_file()]
    if missing:
        raise IndexMismatchError(f"{directory}: no forward index ({', '.join(missing)} missing): the two-stage BM25 "
                                 "search needs one; build it with `hyporag index build ... --bm25-search two-stage`")
    pointers, terms, scores = (np.load(directory / name, mmap_mode="r") for name in FILES)
    if len(pointers) != passages + 1 or len(terms) != postings or len(scores) != postings or \
            int(pointers[-1]) != postings:
        raise IndexMismatchError(f"{directory}: its forward index does not match the BM25 index beside it "
                                 f"({len(pointers) - 1} passages and {len(terms)} postings, against {passages} and "
                                 f"{postings}); rebuild it with `hyporag index build ... --bm25-search two-stage "
                                 "--force`")
    return pointers, terms, scores
