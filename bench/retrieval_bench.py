"""Retrieval figures for README: build cost, per-query latency ratios, library ratios, LLM-free evidence hit rates.

Run after `hyporag index build --corpus medcorp-local --retriever both` (and `--faiss hnsw`):
    .venv/bin/python bench/retrieval_bench.py --queries 200 --out runs/bench/retrieval.json
All latencies are measured in this one process, side by side, and reported as ratios to a plain dense query.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

from hyporag import load_benchmark
from hyporag.eval import option_evidence
from hyporag.retrieval import WeightedQuery, default_index_dir, load_corpus, merge_to_budget, open_index


def contrast(retriever, plus: str, minus: str, lam: float, k: int, mode: str | None = None):
    """sim(d, plus) − λ·sim(d, minus): one weighted query."""
    return retriever.search_weighted([WeightedQuery.difference(plus, minus, lam)], k, mode=mode)[0]


def per_query_ms(fn, items, repeat: int = 1) -> float:
    """Median milliseconds per item of fn(item)."""
    times = []
    for item in items:
        start = time.perf_counter()
        for _ in range(repeat):
            fn(item)
        times.append((time.perf_counter() - start) * 1000 / repeat)
    return statistics.median(times)


def batched_ms(fn, items) -> float:
    start = time.perf_counter()
    fn(items)
    return (time.perf_counter() - start) * 1000 / len(items)


def directory_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def evidence_rates(retriever, examples, k: int, mode: str, with_gold: bool) -> dict:
    """Share of questions whose top-k contains the gold option's text, and a distractor's (normalised match)."""
    queries = [f"{e.question} {e.options[e.answer]}" if with_gold else e.question for e in examples]
    results = []
    for start in range(0, len(queries), 64):
        results += retriever.search_many(queries[start:start + 64], k, mode=mode)
    gold = distractor = 0
    for example, hits in zip(examples, results, strict=True):
        found = option_evidence(example.options, example.answer, [h.contents for h in hits])
        gold += found["gold_in_context"]
        distractor += found["distractor_in_context"]
    return {"gold": gold / len(examples), "distractor": distractor / len(examples)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", default="medcorp-local")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rank-bm25-queries", type=int, default=20)
    parser.add_argument("--out", default="runs/bench/retrieval.json")
    args = parser.parse_args()

    corpus = load_corpus(args.corpus)
    directory = default_index_dir(corpus)
    flat = open_index(directory, corpus=corpus, faiss_kind="flat")
    hnsw = open_index(directory, corpus=corpus, faiss_kind="hnsw", embedder=flat.dense.encoder)
    manifest = flat.manifest
    examples = load_benchmark("medqa-dev").examples
    questions = [e.question for e in examples[: args.queries]]
    contrast = [(f"{e.options[e.answer]}", next(t for x, t in e.options.items() if x != e.answer))
                for e in examples[: args.queries]]
    report: dict = {"corpus": corpus.name, "passages": manifest["passage_count"], "queries": len(questions)}

    parts = manifest["parts"]
    report["build"] = {
        "store_s": parts["store"]["seconds"], "bm25_s": parts["bm25"]["seconds"],
        "dense_embed_s": parts["dense"]["seconds"], "faiss_flat_s": parts["dense"].get("faiss_flat_seconds"),
        "faiss_hnsw_s": parts["dense"].get("faiss_hnsw_seconds"),
        "store_mb": (directory / "passages.sqlite").stat().st_size / 1e6,
        "bm25_mb": directory_mb(directory / "bm25"),
        "vectors_mb": (directory / "dense" / "vectors.npy").stat().st_size / 1e6,
        "faiss_flat_mb": (directory / "dense" / "faiss-flat.index").stat().st_size / 1e6,
        "faiss_hnsw_mb": (directory / "dense" / "faiss-hnsw.index").stat().st_size / 1e6,
    }

    # Warm up every path once (model load, mmap) before timing.
    for r in (flat, hnsw):
        r.search(questions[0], 15, mode="dense")
    flat.search(questions[0], 15, mode="bm25")

    def three_query_merge(q: str) -> None:
        merge_to_budget(flat.search_many([q, q + " mechanism", q + " differential"], 15, mode="dense"), 15)

    latency = {
        "dense_flat": per_query_ms(lambda q: flat.search(q, 15, mode="dense"), questions),
        "dense_hnsw": per_query_ms(lambda q: hnsw.search(q, 15, mode="dense"), questions),
        "bm25": per_query_ms(lambda q: flat.search(q, 15, mode="bm25"), questions),
        "hybrid": per_query_ms(lambda q: flat.search(q, 15, mode="hybrid"), questions),
        "contrastive_dense": per_query_ms(lambda hm: contrast(flat, hm[0], hm[1], 1.0, 15, mode="dense"),
                                          contrast),
        "contrastive_bm25": per_query_ms(lambda hm: contrast(flat, hm[0], hm[1], 1.0, 15, mode="bm25"),
                                         contrast),
        "three_query_merge": per_query_ms(three_query_merge, questions),
        "dense_flat_batched": batched_ms(lambda qs: flat.search_many(qs, 15, mode="dense"), questions),
        "bm25_batched": batched_ms(lambda qs: flat.search_many(qs, 15, mode="bm25"), questions),
        "hybrid_batched": batched_ms(lambda qs: flat.search_many(qs, 15, mode="hybrid"), questions),
    }
    # Where the time goes: the query encoder (1 text vs the 2 of CHR vs the 3 of HCQR) and the FAISS call alone.
    encoder = flat.dense.embedder
    latency["encode_1"] = per_query_ms(lambda q: encoder.encode([q]), questions)
    latency["encode_2"] = per_query_ms(lambda hm: encoder.encode(list(hm)), contrast)
    latency["encode_3"] = per_query_ms(lambda q: encoder.encode([q, q + " mechanism", q + " differential"]),
                                       questions)
    one_vector = flat.dense.encode(questions[:1])
    latency["faiss_flat_search_only"] = per_query_ms(lambda _: flat.dense.search_vectors(one_vector, 15), questions)
    base = latency["dense_flat"]
    report["latency_ms"] = latency
    report["ratio_to_dense"] = {k: v / base for k, v in latency.items()}

    # Search only (no query encoding): FAISS flat vs a NumPy matrix product over the same vectors.
    vectors = np.load(directory / "dense" / "vectors.npy")
    query_vectors = flat.dense.encode(questions)
    start = time.perf_counter()
    flat.dense.search_vectors(query_vectors, 15)
    faiss_ms = (time.perf_counter() - start) * 1000 / len(questions)
    start = time.perf_counter()
    scores = query_vectors @ vectors.T
    k = min(15, len(vectors) - 1)
    top = np.argpartition(-scores, k, axis=1)[:, :k]  # then order the k, as FAISS returns them ordered
    np.take_along_axis(top, np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1), axis=1)
    numpy_ms = (time.perf_counter() - start) * 1000 / len(questions)
    report["faiss_vs_numpy"] = {"faiss_flat_ms": faiss_ms, "numpy_ms": numpy_ms,
                                "numpy_over_faiss": numpy_ms / faiss_ms}

    # bm25s vs rank_bm25 on the same corpus and the same (bm25s-stemmed) tokens.
    import bm25s
    from rank_bm25 import BM25Okapi

    texts = [t for batch in flat.store.texts() for t in batch]
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=flat.bm25.stemmer, return_ids=False, show_progress=False)
    start = time.perf_counter()
    okapi = BM25Okapi(tokens, k1=1.5, b=0.75)
    rank_build = time.perf_counter() - start
    sample = questions[: args.rank_bm25_queries]
    sample_tokens = bm25s.tokenize(sample, stopwords="en", stemmer=flat.bm25.stemmer, return_ids=False,
                                   show_progress=False)
    rank_ms = per_query_ms(lambda t: np.argsort(-okapi.get_scores(t))[:15], sample_tokens)
    bm25s_ms = per_query_ms(lambda q: flat.bm25.search_many([q], 15), sample)
    report["bm25s_vs_rank_bm25"] = {"rank_bm25_build_s": rank_build, "rank_bm25_ms": rank_ms, "bm25s_ms": bm25s_ms,
                                    "speedup": rank_ms / bm25s_ms}

    # Evidence hit rates on all of medqa-dev, no LLM involved.
    report["evidence_top15"] = {
        f"{mode}/{'question+gold' if gold else 'question'}": evidence_rates(flat, examples, 15, mode, gold)
        for mode in ("bm25", "dense", "hybrid") for gold in (False, True)
    }
    report["evidence_questions"] = len(examples)
    partial = args.out.with_name(args.out.name + ".partial")
    partial.write_text(json.dumps(report, indent=2))
    os.replace(partial, args.out)  # a killed bench never leaves half a report
    print(json.dumps(report, indent=2))
    print(markdown(report))


def markdown(report: dict) -> str:
    """The README tables."""
    b = report["build"]
    lines = ["| part | build time | size |", "|---|---:|---:|",
             f"| passage store (SQLite) | {b['store_s']:.1f} s | {b['store_mb']:.0f} MB |",
             f"| BM25 (bm25s) | {b['bm25_s']:.1f} s | {b['bm25_mb']:.0f} MB |",
             f"| MiniLM vectors | {b['dense_embed_s'] / 60:.1f} min | {b['vectors_mb']:.0f} MB |",
             f"| FAISS flat | {b['faiss_flat_s']:.1f} s | {b['faiss_flat_mb']:.0f} MB |",
             f"| FAISS HNSW32 | {b['faiss_hnsw_s']:.1f} s | {b['faiss_hnsw_mb']:.0f} MB |", "",
             "| query (k=15) | ms / query | × plain dense |", "|---|---:|---:|"]
    for name, ms in report["latency_ms"].items():
        lines.append(f"| {name} | {ms:.2f} | {report['ratio_to_dense'][name]:.2f} |")
    f, r = report["faiss_vs_numpy"], report["bm25s_vs_rank_bm25"]
    lines += ["", f"FAISS flat {f['faiss_flat_ms']:.2f} ms vs NumPy matrix product {f['numpy_ms']:.2f} ms per query "
              f"(batched, search only): NumPy/FAISS = {f['numpy_over_faiss']:.2f}.",
              f"bm25s {r['bm25s_ms']:.2f} ms vs rank_bm25 {r['rank_bm25_ms']:.0f} ms per query: "
              f"{r['speedup']:.0f}x (rank_bm25 index build {r['rank_bm25_build_s']:.0f} s).", "",
              f"| top-15 on medqa-dev (n={report['evidence_questions']}) | gold option text | a distractor's text |",
              "|---|---:|---:|"]
    for name, rates in report["evidence_top15"].items():
        lines.append(f"| {name} | {rates['gold']:.3f} | {rates['distractor']:.3f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
