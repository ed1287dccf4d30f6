"""Index growth on this machine: corpora of N passages resampled from the local corpus's sentences, BM25 and
IVF-PQ built through `hyporag index build` (BM25 in chunks; IVF-PQ from precomputed vectors), each in its own
process so its peak RSS is its own. Reports build time, peak RSS, disk, query p50/p95 at k = 15, IVF-PQ recall@15
against exact search, and the log-log growth exponent of each figure between the smallest and largest N.

Passages are topical: a passage takes 3-8 sentences from one window of the source text (sentences in source
order, so a window is one section of one book). Vectors are a random projection of that structure: a sentence's
vector is its section's seeded random centre plus its own noise, a passage's the normalised sum of its sentences'.
Passages of one section are close and others far, as real embeddings cluster by topic, and 5M of them cost
seconds instead of weeks of CPU embedding.
    .venv/bin/python bench/scale_bench.py --sizes 100000,1000000,5000000 --out runs/scale --doc docs/scale-table.md
"""

from __future__ import annotations

import argparse
import json
import math
import re
import resource
import shutil
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
    kwargs = {"retriever": "bm25", "bm25_engine": "bm25s"} if part == "bm25" else {
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


def timed(search, probes: list, warm: int = 20) -> tuple[tuple[float, float], float, list]:
    """(p50, p95) ms over the probes after `warm` untimed ones, the first (cold) query's ms, and the results. A
    service is warm after its first queries; the cold figure is what the very first one costs (page faults)."""
    started = time.perf_counter()
    search(probes[0])
    cold = (time.perf_counter() - started) * 1e3
    for probe in probes[1:warm]:
        search(probe)
    times, found = [], []
    for probe in probes:
        started = time.perf_counter()
        found.append(search(probe))
        times.append(time.perf_counter() - started)
    return percentile_ms(times), cold, found


def exact_top(vectors: np.ndarray, probes: np.ndarray, size: int) -> np.ndarray:
    """Exact top-K rows of every probe, chunk by chunk over the memory map (the recall reference)."""
    from hyporag.retrieval import build_faiss, release_pages

    best = np.full((len(probes), K), -np.inf, dtype=np.float32)
    rows = np.zeros((len(probes), K), dtype=np.int64)
    for start in range(0, size, SHARD):
        scores, ids = build_faiss(np.asarray(vectors[start:start + SHARD]), "flat").search(probes, K)
        release_pages(vectors)
        merged_s, merged_r = np.hstack([best, scores]), np.hstack([rows, ids + start])
        order = np.argsort(-merged_s, axis=1)[:, :K]
        best, rows = np.take_along_axis(merged_s, order, 1), np.take_along_axis(merged_r, order, 1)
    return rows


def query(directory: Path, size: int) -> dict:
    """Latency of BM25 and IVF-PQ at k = 15 (one query at a time, as a program asks), warm and cold, and IVF-PQ's
    recall@15 against exact search at each nprobe of a sweep (the default last)."""
    import faiss

    from hyporag.retrieval import default_nprobe, load_corpus, open_index

    corpus = load_corpus(str(directory / "corpus.jsonl"))
    rng = np.random.default_rng(1)
    texts = [line for i, line in enumerate((directory / "corpus.jsonl").open()) if i < 5000]
    asked = [" ".join(json.loads(texts[i])["contents"].split()[:12]) for i in rng.integers(0, len(texts), QUERIES)]
    bm25 = open_index(directory / "index-bm25", corpus, mode="bm25", checksums=False)
    bm25_ms, bm25_cold, _ = timed(lambda q: bm25.bm25.search_many([q], K), asked)
    dense = open_index(directory / "index-ivfpq", corpus, mode="dense", faiss_kind="ivfpq", checksums=False).dense
    vectors = np.load(directory / "index-ivfpq" / "dense" / "vectors.npy", mmap_mode="r")
    picks = rng.integers(0, size, QUERIES)
    probes = np.asarray(vectors[np.sort(picks)], dtype=np.float32) + 0.02 * rng.normal(size=(QUERIES, DIM))
    probes = (probes / np.linalg.norm(probes, axis=1, keepdims=True)).astype(np.float32)
    exact = exact_top(vectors, probes, size)
    ivf = faiss.extract_index_ivf(dense.index)
    sweep = {}
    for nprobe in sorted({n for n in (8, 16, 32, 64, 128) if n < ivf.nlist} | {default_nprobe(ivf.nlist)}):
        ivf.nprobe = nprobe
        ms, cold, found = timed(lambda p: dense.search_vectors(p[None], K)[0][0], list(probes))
        recall = float(np.mean([len(set(f) & set(e)) / K for f, e in zip(found, exact, strict=True)]))
        sweep[nprobe] = {"ms": ms, "cold_ms": cold, "recall_at_15": recall}
    chosen = sweep[default_nprobe(ivf.nlist)]
    return {"bm25_ms": bm25_ms, "bm25_cold_ms": bm25_cold, "ivfpq_ms": chosen["ms"],
            "ivfpq_cold_ms": chosen["cold_ms"], "ivfpq_recall_at_15": chosen["recall_at_15"], "nlist": ivf.nlist,
            "nprobe": default_nprobe(ivf.nlist), "sweep": sweep}


def exponent(sizes: list[int], values: list[float]) -> float:
    return math.log(values[-1] / values[0]) / math.log(sizes[-1] / sizes[0]) if values[0] > 0 else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000,5000000")
    parser.add_argument("--out", type=Path, default=Path("runs/scale"))
    parser.add_argument("--doc", type=Path, help="write the markdown table here (and a log-log PNG beside it)")
    parser.add_argument("--redo", help="rebuild these parts (bm25,ivfpq) of sizes already measured; queries always")
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
        row = json.loads(cached.read_text()) if cached.is_file() else {}
        redo = set(args.redo.split(",")) if args.redo else set()
        if row and not redo:
            results[size] = row
            continue
        make_corpus(size, directory)
        for part in ("bm25", "ivfpq"):
            if part in row and part not in redo:
                continue
            shutil.rmtree(directory / f"index-{part}", ignore_errors=True)
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
        plot(sizes, results, args.doc.with_suffix(".png"))
    return 0


def plot(sizes: list[int], results: dict, path: Path) -> None:
    """Log-log growth: build seconds, peak RSS and query p50 of BM25 and IVF-PQ against N."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (("build s", "seconds", None), ("peak RSS GiB", "peak_rss_gib", None), ("query p50 ms", None, 0))
    figure, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for axis, (label, key, quantile) in zip(axes, panels, strict=True):
        for part, name in (("bm25", "BM25"), ("ivfpq", "IVF-PQ")):
            values = ([results[s][part][key] for s in sizes] if key else
                      [results[s]["query"][f"{part}_ms"][quantile] for s in sizes])
            axis.loglog(sizes, values, marker="o", label=f"{name} (exponent {exponent(sizes, values):.2f})")
        axis.set_xlabel("passages")
        axis.set_title(label)
        axis.legend(fontsize=8)
        axis.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def table(sizes: list[int], results: dict) -> str:
    figures = {
        "BM25 build s": [results[s]["bm25"]["seconds"] for s in sizes],
        "BM25 peak RSS GiB": [results[s]["bm25"]["peak_rss_gib"] for s in sizes],
        "BM25 disk GiB": [results[s]["bm25"]["disk_gib"] for s in sizes],
        "BM25 query p50 ms": [results[s]["query"]["bm25_ms"][0] for s in sizes],
        "BM25 query p95 ms": [results[s]["query"]["bm25_ms"][1] for s in sizes],
        "BM25 first (cold) query ms": [results[s]["query"]["bm25_cold_ms"] for s in sizes],
        "IVF-PQ build s": [results[s]["ivfpq"]["seconds"] for s in sizes],
        "IVF-PQ peak RSS GiB": [results[s]["ivfpq"]["peak_rss_gib"] for s in sizes],
        "IVF-PQ disk GiB": [results[s]["ivfpq"]["disk_gib"] for s in sizes],
        "IVF-PQ query p50 ms": [results[s]["query"]["ivfpq_ms"][0] for s in sizes],
        "IVF-PQ query p95 ms": [results[s]["query"]["ivfpq_ms"][1] for s in sizes],
        "IVF-PQ first (cold) query ms": [results[s]["query"]["ivfpq_cold_ms"] for s in sizes],
    }
    lines = ["| figure | " + " | ".join(f"{s:,}" for s in sizes) + " | growth exponent |",
             "|---|" + "---:|" * (len(sizes) + 1)]
    for name, values in figures.items():
        lines.append(f"| {name} | " + " | ".join(f"{v:.3g}" for v in values) + f" | {exponent(sizes, values):.2f} |")
    lines.append("| IVF-PQ recall@15 vs exact | " + " | ".join(
        f"{results[s]['query']['ivfpq_recall_at_15']:.3f}" for s in sizes) + " | |")
    lines.append("| IVF lists / nprobe (default) | " + " | ".join(
        f"{results[s]['query']['nlist']} / {results[s]['query']['nprobe']}" for s in sizes) + " | |")
    lines += ["", "nprobe sweep (IVF-PQ, k = 15, shortlist re-scored exactly): p50 ms / recall@15", "",
              "| nprobe | " + " | ".join(f"{s:,}" for s in sizes) + " |", "|---:|" + "---:|" * len(sizes)]
    probes = sorted({int(n) for s in sizes for n in results[s]["query"]["sweep"]})
    for n in probes:
        cells = []
        for s in sizes:
            point = results[s]["query"]["sweep"].get(str(n)) or results[s]["query"]["sweep"].get(n)
            cells.append(f"{point['ms'][0]:.2f} / {point['recall_at_15']:.3f}" if point else "–")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
