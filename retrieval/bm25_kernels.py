"""Compiled BM25 loops (numba, JIT-cached on disk): exhaustive term-at-a-time scoring over bm25s's CSC arrays with
the top-k chosen in the same pass, and exact scores of a few rows without touching the others.

Why not bm25s's own numba backend: it compiles in every process (no disk cache), allocates an N-sized score array
per query, and breaks ties by heap order rather than by row. These loops keep bm25s's arithmetic exactly: each
passage's score is the float32 sum of its postings' scores in the query's term order, as `np.add.at` adds them, so
scores and rankings are bit-identical to `BM25.get_scores_from_ids` followed by a top-k with ties by row.

Windows: the score buffer holds WINDOW passages at a time (1 MB, cache-resident), each term's postings are read
up to the window's end (bm25s writes every term's postings in ascending row order), and the window's passages are
offered to the top-k heap before the next window is scored. A posting list found out of order makes the windowed
search return a flag, and the caller scores with the whole-array loop instead.
"""

from __future__ import annotations

import numpy as np
from numba import njit

WINDOW = 1 << 18  # passages per window: 1 MB of float32 scores, one core's L2 here (2^16-2^19 measured at 5M)


@njit(cache=True, nogil=True, inline="always")
def _worse(score_a, row_a, score_b, row_b):
    """a ranks below b: a lower score, or the same score and a later row (ties are broken by row)."""
    return score_a < score_b or (score_a == score_b and row_a > row_b)


@njit(cache=True, nogil=True)
def _sift_down(scores, rows, size, position):
    """Restore the min-heap (worst entry at 0) below `position`."""
    while True:
        child = 2 * position + 1
        if child >= size:
            return
        right = child + 1
        if right < size and _worse(scores[right], rows[right], scores[child], rows[child]):
            child = right
        if not _worse(scores[child], rows[child], scores[position], rows[position]):
            return
        scores[position], scores[child] = scores[child], scores[position]
        rows[position], rows[child] = rows[child], rows[position]
        position = child


@njit(cache=True, nogil=True)
def _offer(heap_scores, heap_rows, size, k, score, row):
    """Offer one passage (rows arrive in ascending order) to a heap of `size` <= k entries; returns the new size.
    A full heap takes it only if it scores strictly more than the worst: an equal score has a later row."""
    if size < k:
        heap_scores[size] = score
        heap_rows[size] = row
        position = size
        while position > 0:  # sift up
            parent = (position - 1) >> 1
            if not _worse(heap_scores[position], heap_rows[position], heap_scores[parent], heap_rows[parent]):
                break
            heap_scores[position], heap_scores[parent] = heap_scores[parent], heap_scores[position]
            heap_rows[position], heap_rows[parent] = heap_rows[parent], heap_rows[position]
            position = parent
        return size + 1
    if score > heap_scores[0]:
        heap_scores[0] = score
        heap_rows[0] = row
        _sift_down(heap_scores, heap_rows, size, 0)
    return size


@njit(cache=True, nogil=True)
def _scan(buffer, count, base, shift, heap_scores, heap_rows, size, k):
    """Offer rows base..base+count (scores buffer[0:count] + shift) to the heap; returns its new size. Once full,
    a row costs one comparison with the worst entry kept in a local (a call per row was 15x slower)."""
    offset = 0
    while size < k and offset < count:
        size = _offer(heap_scores, heap_rows, size, k, buffer[offset] + shift, base + offset)
        offset += 1
    if size < k:
        return size
    worst = heap_scores[0]
    for position in range(offset, count):
        score = buffer[position] + shift
        if score > worst:
            heap_scores[0] = score
            heap_rows[0] = base + position
            _sift_down(heap_scores, heap_rows, size, 0)
            worst = heap_scores[0]
    return size


@njit(cache=True, nogil=True)
def _drain(heap_scores, heap_rows, size, out_rows, out_scores):
    """Write the heap's entries best first (ties by row) into the outputs."""
    for slot in range(size - 1, -1, -1):
        out_scores[slot] = heap_scores[0]
        out_rows[slot] = heap_rows[0]
        last = slot
        heap_scores[0] = heap_scores[last]
        heap_rows[0] = heap_rows[last]
        _sift_down(heap_scores, heap_rows, last, 0)


@njit(cache=True, nogil=True)
def _first_at_least(indices, low, high, row):
    """The first position in indices[low:high] (ascending) holding a row >= `row` (high if none)."""
    while low < high:
        middle = (low + high) >> 1
        if indices[middle] < row:
            low = middle + 1
        else:
            high = middle
    return low


@njit(cache=True, nogil=True)
def search_windowed(term_ids, data, indptr, indices, num_docs, shift, buffer, cursors, heap_scores, heap_rows,
                    out_rows, out_scores):
    """Exact top-k (k = len(out_rows)) of one query, scored window by window; every term's postings must be in
    ascending row order (`postings_ascending`). Each window's end is found in each posting list by binary search,
    so the inner loop is one add per posting."""
    k = out_rows.shape[0]
    window = buffer.shape[0]
    terms = term_ids.shape[0]
    for t in range(terms):
        cursors[t] = indptr[term_ids[t]]
    size = 0
    for start in range(0, num_docs, window):
        stop = min(start + window, num_docs)
        buffer[: stop - start] = 0
        for t in range(terms):
            j = cursors[t]
            end = _first_at_least(indices, j, indptr[term_ids[t] + 1], stop)
            for position in range(j, end):
                buffer[indices[position] - start] += data[position]
            cursors[t] = end
        size = _scan(buffer, stop - start, start, shift, heap_scores, heap_rows, size, k)
    _drain(heap_scores, heap_rows, size, out_rows, out_scores)


@njit(cache=True, nogil=True)
def search_whole(term_ids, data, indptr, indices, num_docs, shift, buffer, heap_scores, heap_rows, out_rows,
                 out_scores):
    """Exact top-k of one query over an N-sized score buffer (any posting order)."""
    k = out_rows.shape[0]
    buffer[:num_docs] = 0
    for t in range(term_ids.shape[0]):
        for j in range(indptr[term_ids[t]], indptr[term_ids[t] + 1]):
            buffer[indices[j]] += data[j]
    size = _scan(buffer, num_docs, 0, shift, heap_scores, heap_rows, 0, k)
    _drain(heap_scores, heap_rows, size, out_rows, out_scores)


@njit(cache=True, nogil=True)
def postings_ascending(term_ids, indptr, indices, state):
    """Whether every listed term's postings are in ascending row order, each term checked once per process:
    `state` (one byte per term of the vocabulary) remembers 1 for ascending, 2 for not."""
    for t in range(term_ids.shape[0]):
        term = term_ids[t]
        if state[term] == 0:  # written once known, so another thread never trusts a half-checked term
            verdict = 1
            for j in range(indptr[term] + 1, indptr[term + 1]):
                if indices[j] <= indices[j - 1]:
                    verdict = 2
                    break
            state[term] = verdict
        if state[term] == 2:
            return False
    return True


@njit(cache=True, nogil=True)
def score_rows_sorted(term_ids, data, indptr, indices, rows, shift, out):
    """Exact scores of the given rows only: each term's (ascending, see `postings_ascending`) postings are
    binary-searched for each row, adding in the query's term order as full scoring does."""
    out[:] = 0
    for t in range(term_ids.shape[0]):
        low_bound = indptr[term_ids[t]]
        high_bound = indptr[term_ids[t] + 1]
        for i in range(rows.shape[0]):
            low = _first_at_least(indices, low_bound, high_bound, rows[i])
            if low < high_bound and indices[low] == rows[i]:
                out[i] += data[low]
    for i in range(rows.shape[0]):
        out[i] += shift


# -- two-stage search: rare terms over every passage, then exact scores of the best candidates ------------------
@njit(cache=True, nogil=True)
def count_per_row(indices, counts):
    """Postings per passage (the forward index's row lengths)."""
    for j in range(indices.shape[0]):
        counts[indices[j]] += 1


@njit(cache=True, nogil=True)
def fill_forward(indptr, indices, data, term_start, term_stop, cursors, forward_terms, forward_scores):
    """Write terms term_start..term_stop's postings into the forward index (passage -> its terms, ascending, and
    their scores); `cursors` holds each passage's next free slot."""
    for term in range(term_start, term_stop):
        for j in range(indptr[term], indptr[term + 1]):
            row = indices[j]
            slot = cursors[row]
            forward_terms[slot] = term
            forward_scores[slot] = data[j]
            cursors[row] = slot + 1


@njit(cache=True, nogil=True)
def rescore_from_forward(term_ids, shift, forward_ptr, forward_terms, forward_scores, candidates, slots,
                         contributions, heap_scores, heap_rows, out_rows, out_scores):
    """The second stage of the two-stage search: the exact scores of `candidates` (rows, ascending) from the forward
    index, adding each term's score in the query's order as exhaustive scoring does (so a passage that reaches the
    top k has its exact score), and their top k (k = len(out_rows)), ties by row. `slots` (one int per vocabulary
    term, all -1 between calls) maps a term to its first position in the query; `contributions` holds one
    candidate's per-position scores."""
    k = out_rows.shape[0]
    terms = term_ids.shape[0]
    for t in range(terms - 1, -1, -1):  # the first position of a repeated term wins
        slots[term_ids[t]] = t
    size = 0
    for c in range(candidates.shape[0]):
        row = candidates[c]
        contributions[:terms] = 0
        for position in range(forward_ptr[row], forward_ptr[row + 1]):
            slot = slots[forward_terms[position]]
            if slot >= 0:
                contributions[slot] = forward_scores[position]
        total = np.float32(0)
        for t in range(terms):
            total += contributions[slots[term_ids[t]]]
        size = _offer(heap_scores, heap_rows, size, k, total + shift, row)
    for t in range(terms):
        slots[term_ids[t]] = -1
    _drain(heap_scores, heap_rows, size, out_rows, out_scores)
    return size
