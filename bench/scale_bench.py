"""Index growth on this machine: corpora of N passages resampled from the local corpus's sentences, BM25 and
IVF-PQ built through `hyporag index build` (BM25 in chunks; IVF-PQ from precomputed vectors), each in its own
process so its peak RSS is its own. Reports build time, peak RSS, disk, query p50/p95 at k = 15, IVF-PQ recall@15
against exact search, and the log-log growth exponent of each figure between the smallest and largest N.

Passages are topical: a passage takes 3-8 sentences from one window of the source text (sentences in source
order, so a window is one section of one book). Vectors are a random projection of that structure: a sentence's
vector is its section's seeded random centre plus its own noise, a passage's the normalised sum of its sentences'.
Passages of one section are close and others far, as real embeddings cluster by topic, and 5M of them cost
seconds instead of weeks of CPU embedding.
    .venv/bin/python bench/scale_bench.py --sizes 100000,1000000,5000000 --out runs/scale --doc docs/scale.md
"""

from __future__ import annotations

import argparse
import json
import math
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DIM, K, QUERIES, SHARD = 384, 15, 200, 100_000
SECTION, WINDOW, NOISE = 40, 20, 0.8  # sentences a topic centre covers; a passage's window; a sentence's own part


def sentences(limit: int = 400_000) -> list[str]:
    from hyporag.retrieval import load_corpus

    pool: list[str] = []
    for passage in load_corpus("medcorp-local"):
        pool += [s for s in re.split(r"(?<=[.!?])\s+", passage.contents) if 20 <= len(s) <= 400]
        if len(pool) >= limit:
            break
    return pool


def make_corpus(size: int, directory: Path, seed: int = 0) -> None:
    """`size` passages of 3-8 seeded random sentences, with vector shards (ours: .npy + .ids.json) beside them."""
    if (directory / "done").is_file():
        return
    directory.mkdir(parents=True, exist_ok=True)
    pool = sentences()
    rng = np.random.default_rng(seed)
    sections = rng.normal(size=(len(pool) // SECTION + 1, DIM)).astype(np.float32)
    basis = sections[np.arange(len(pool)) // SECTION] + NOISE * rng.normal(size=(len(pool), DIM)).astype(np.float32)
    basis /= np.linalg.norm(basis, axis=1, keepdims=True)
    (directory / "vectors").mkdir(exist_ok=True)
    with (directory / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for start in range(0, size, SHARD):
            n = min(SHARD, size - start)
            lengths = rng.integers(3, 9, n)
            owners = np.repeat(np.arange(n), lengths)
            anchors = rng.integers(0, len(pool), n)[owners]  # one window of the source text per passage
            picks = np.clip(anchors + rng.integers(-WINDOW, WINDOW + 1, len(owners)), 0, len(pool) - 1)
            vectors = np.zeros((n, DIM), dtype=np.float32)
            np.add.at(vectors, owners, basis[picks])
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            ids = [f"s{start + i}" for i in range(n)]
            bounds = np.r_[0, np.cumsum(lengths)]
            for i, pid in enumerate(ids):
                text = " ".join(pool[j] for j in picks[bounds[i]:bounds[i + 1]])
                out.write(json.dumps({"id": pid, "title": "", "contents": text}) + "\n")
            np.save(directory / "vectors" / f"{start // SHARD:05d}.npy", vectors)
            (directory / "vectors" / f"{start // SHARD:05d}.ids.json").write_text(json.dumps(ids))
    (directory / "done").write_text("ok")


def child(part: str, directory: Path) -> dict:
    """One build in this (child) process; returns its seconds and peak RSS."""
    from hyporag.retrieval import build_index, load_corpus

    corpus = load_corpus(str(directory / "corpus.jsonl"))
    started = time.perf_counter()
    kwargs = {"retriever": "bm25"} if part == "bm25" else {
        "retriever": "dense", "embedder_name": f"hashing-{DIM}", "faiss_kind": "ivfpq",
        "vectors": directory / "vectors"}
    index_dir = build_index(corpus, directory / f"index-{part}", progress=False, log=lambda m: None, **kwargs)
    seconds = time.perf_counter() - started
    manifest = json.loads((index_dir / "manifest.json").read_text())
    disk = sum(f.stat().st_size for f in index_dir.rglob("*") if f.is_file())
    return {"seconds": seconds, "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            "disk_gib": disk / 2**30, "parts": manifest["parts"]}


def percentile_ms(times: list[float]) -> tuple[float, float]:
    return float(np.percentile(times, 50) * 1e3), float(np.percentile(times, 95) * 1e3)


def query(directory: Path, size: int) -> dict:
    """Latency of BM25 and IVF-PQ at k = 15 (one query at a time, as a program asks), and IVF-PQ recall@15."""
    from hyporag.retrieval import load_corpus, open_index
    from hyporag.retrieval.dense import build_faiss

    corpus = load_corpus(str(directory / "corpus.jsonl"))
    rng = np.random.default_rng(1)
    texts = [line for i, line in enumerate((directory / "corpus.jsonl").open()) if i < 5000]
    asked = [" ".join(json.loads(texts[i])["contents"].split()[:12]) for i in rng.integers(0, len(texts), QUERIES)]
    bm25 = open_index(directory / "index-bm25", corpus, mode="bm25", checksums=False)
    bm25_times = []
    for q in asked:
        started = time.perf_counter()
        bm25.bm25.search_many([q], K)
        bm25_times.append(time.perf_counter() - started)
    dense = open_index(directory / "index-ivfpq", corpus, mode="dense", faiss_kind="ivfpq", checksums=False).dense
    vectors = np.load(directory / "index-ivfpq" / "dense" / "vectors.npy", mmap_mode="r")
    picks = rng.integers(0, size, QUERIES)
    probes = np.asarray(vectors[np.sort(picks)], dtype=np.float32) + 0.02 * rng.normal(size=(QUERIES, DIM))
    probes = (probes / np.linalg.norm(probes, axis=1, keepdims=True)).astype(np.float32)
    dense_times, found = [], []
    for probe in probes:
        started = time.perf_counter()
        rows, _ = dense.search_vectors(probe[None], K)
        dense_times.append(time.perf_counter() - started)
        found.append(rows[0])
    out = {"bm25_ms": percentile_ms(bm25_times), "ivfpq_ms": percentile_ms(dense_times)}
    if size <= 1_000_000:  # exact search for the recall figure, chunk by chunk over the memory map
        best = np.full((QUERIES, K), -np.inf, dtype=np.float32)
        rows = np.zeros((QUERIES, K), dtype=np.int64)
        for start in range(0, size, SHARD):
            scores, ids = build_faiss(np.asarray(vectors[start:start + SHARD]), "flat").search(probes, K)
            merged_s, merged_r = np.hstack([best, scores]), np.hstack([rows, ids + start])
            order = np.argsort(-merged_s, axis=1)[:, :K]
            best, rows = np.take_along_axis(merged_s, order, 1), np.take_along_axis(merged_r, order, 1)
        out["ivfpq_recall_at_15"] = float(np.mean([len(set(f) & set(e)) / K for f, e in zip(found, rows,
                                                                                          strict=True)]))
    return out


def exponent(sizes: list[int], values: list[float]) -> float:
    return math.log(values[-1] / values[0]) / math.log(sizes[-1] / sizes[0]) if values[0] > 0 else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000,5000000")
    parser.add_argument("--out", type=Path, default=Path("runs/scale"))
    parser.add_argument("--doc", type=Path, help="write the markdown table here (and a log-log PNG beside it)")
    parser.add_argument("--child", nargs=2, metavar=("PART", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]))))
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    results = {}
    for size in sizes:
        directory = args.out / str(size)
        cached = directory / "result.json"
        if cached.is_file():
            results[size] = json.loads(cached.read_text())
            continue
        make_corpus(size, directory)
        row = {}
        for part in ("bm25", "ivfpq"):
            done = subprocess.run([sys.executable, __file__, "--child", part, str(directory)], check=True,
                                  capture_output=True, text=True)
            row[part] = json.loads(done.stdout.strip().splitlines()[-1])
        row["query"] = query(directory, size)
        cached.write_text(json.dumps(row, indent=1))
        results[size] = row
        print(size, json.dumps(row["query"]), file=sys.stderr)
    print(table(sizes, results))
    if args.doc:
        args.doc.write_text(table(sizes, results))
    return 0


def table(sizes: list[int], results: dict) -> str:
    figures = {
        "BM25 build s": [results[s]["bm25"]["seconds"] for s in sizes],
        "BM25 peak RSS GiB": [results[s]["bm25"]["peak_rss_gib"] for s in sizes],
        "BM25 disk GiB": [results[s]["bm25"]["disk_gib"] for s in sizes],
        "BM25 query p50 ms": [results[s]["query"]["bm25_ms"][0] for s in sizes],
        "BM25 query p95 ms": [results[s]["query"]["bm25_ms"][1] for s in sizes],
        "IVF-PQ build s": [results[s]["ivfpq"]["seconds"] for s in sizes],
        "IVF-PQ peak RSS GiB": [results[s]["ivfpq"]["peak_rss_gib"] for s in sizes],
        "IVF-PQ disk GiB": [results[s]["ivfpq"]["disk_gib"] for s in sizes],
        "IVF-PQ query p50 ms": [results[s]["query"]["ivfpq_ms"][0] for s in sizes],
        "IVF-PQ query p95 ms": [results[s]["query"]["ivfpq_ms"][1] for s in sizes],
    }
    lines = ["| figure | " + " | ".join(f"{s:,}" for s in sizes) + " | growth exponent |",
             "|---|" + "---:|" * (len(sizes) + 1)]
    for name, values in figures.items():
        lines.append(f"| {name} | " + " | ".join(f"{v:.3g}" for v in values) + f" | {exponent(sizes, values):.2f} |")
    recall = {s: results[s]["query"].get("ivfpq_recall_at_15") for s in sizes}
    lines.append("| IVF-PQ recall@15 vs exact | " + " | ".join("–" if recall[s] is None else f"{recall[s]:.3f}"
                                                          for s in sizes) + " | |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
