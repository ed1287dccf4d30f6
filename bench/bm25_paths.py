"""hyporag's exhaustive BM25 loop and two-stage search, tuned on one index: the score window's size, and the
two-stage search's rare-term share and candidate depth, against the exact ranking.

Queries: seeded MedQA-US dev questions with their options (the longest queries hyporag sends). Per setting: p50 ms
at k = 15 over the queries after 10 warm-up ones, ns per posting (Σdf, the postings the exact search reads), and
the mean top-15 overlap with the exact ranking, with the share of queries whose top 15 differ. Run it pinned to one
core for the figures docs/results/scale.md quotes:

    taskset -c 0 .venv/bin/python bench/bm25_paths.py --index-dir runs/scale/5000000/index-bm25
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

from hyporag import load_benchmark
from hyporag.retrieval import BM25Index

K, WARM = 15, 10


def timed(index: BM25Index, queries: list[str]) -> tuple[list[float], list[list[int]]]:
    for q in queries[:WARM]:
        index.search_many([q], K)
    times, found = [], []
    for q in queries:
        started = time.perf_counter()
        rows = index.search_many([q], K)[0][0]
        times.append(time.perf_counter() - started)
        found.append([int(r) for r in rows if r >= 0])
    return times, found


def line(name: str, times: list[float], postings: list[int], found, exact) -> str:
    per_posting = statistics.median(t * 1e9 / n for t, n in zip(times, postings, strict=True) if n)
    overlaps = [len(set(a) & set(b)) / max(1, len(b)) for a, b in zip(found, exact, strict=True)]
    return (f"| {name} | {statistics.median(times) * 1e3:.1f} | {per_posting:.2f} | {statistics.mean(overlaps):.4f} "
            f"| {sum(o < 1 for o in overlaps) / len(overlaps):.3f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", type=Path, required=True, help="an index with a bm25s part (and, for the "
                        "two-stage rows, its forward index: index build --bm25-search two-stage)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--windows", default="14,16,17,18,19,20", help="log2 of the window sizes to time")
    parser.add_argument("--shares", default="0.02,0.03,0.05", help="two-stage: rare-term shares of passages")
    parser.add_argument("--depths", default="500,1000,2000", help="two-stage: candidates rescored exactly")
    args = parser.parse_args(argv)
    bm25_dir = args.index_dir / BM25Index.DIRNAME
    examples = random.Random(0).sample(load_benchmark("medqa-dev").examples, args.queries)
    queries = [f"{e.question} " + " ".join(e.options.values()) for e in examples]
    reference = BM25Index.load(bm25_dir, backend="numpy")
    postings = [reference.postings(q) for q in queries]
    print(f"{reference.size:,} passages, {len(queries)} questions with options, Σdf p50 "
          f"{statistics.median(postings) / 1e6:.2f}M postings\n")
    print("| setting | p50 ms | ns/posting | top-15 overlap vs exact | share of queries not identical |")
    print("|---|---:|---:|---:|---:|")
    times, exact = timed(reference, queries)
    print(line("numpy np.add.at + block top-k (exact)", times, postings, exact, exact), flush=True)
    whole = BM25Index.load(bm25_dir)
    whole.compiled.windowed = False
    times, found = timed(whole, queries)
    print(line("compiled, whole score array (exact)", times, postings, found, exact), flush=True)
    for power in map(int, args.windows.split(",")):
        times, found = timed(BM25Index.load(bm25_dir, window=1 << power), queries)
        print(line(f"compiled, windows of 2^{power} (exact)", times, postings, found, exact), flush=True)
    if not (args.index_dir / "bm25-forward").is_dir():
        print("\n(no forward index: two-stage rows need `hyporag index build --bm25-search two-stage`)",
              file=sys.stderr)
        return 0
    for share in map(float, args.shares.split(",")):
        for depth in map(int, args.depths.split(",")):
            index = BM25Index.load(bm25_dir, search="two-stage", rare_share=share, depth=depth)
            times, found = timed(index, queries)
            print(line(f"two-stage, rare ≤ {share:.0%} of passages, depth {depth}", times, postings, found, exact),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
