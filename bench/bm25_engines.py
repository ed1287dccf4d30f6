"""BM25 engines side by side on the queries hyporag really sends, in one process, over one built index.

Engines: hyporag's own scoring loop over bm25s's matrices (`BM25Index.search_many`, what ships), bm25s's own
`retrieve(n_threads=1)` on the same model, and tantivy (Rust; `pip install tantivy`), built here from the same
passage store with its English stemmer. Query sets: MedQA-US dev questions, the same with their options, CHR's H+
texts from real runs (read from results directories given with --chr-runs), and passages' first 12 words (the
probes docs/scale.md used before), each labelled. Per engine and set: p50 / p95 ms at k = 15 after 20 warm-up
queries (rounds alternate the engines' order), the first query's ms, build seconds, disk, and the mean top-15
overlap with bm25s's ranking (the scores hyporag ships).
    .venv/bin/python bench/bm25_engines.py --index-dir DIR [--chr-runs RUN_DIR ...] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import sys
import time
from pathlib import Path

from hyporag import load_benchmark
from hyporag.eval import read_results
from hyporag.retrieval import BM25Index, PassageStore

K, WARM = 15, 20


def query_sets(store: PassageStore, count: int, chr_runs: list[Path]) -> dict[str, list[str]]:
    rng = random.Random(0)
    questions = rng.sample(load_benchmark("medqa-dev").examples, count)
    options = [f"{e.question} " + " ".join(e.options.values()) for e in questions]
    hplus = [r["queries"][0] for run in chr_runs for r in read_results(run) if r["method"] == "chr" and r["queries"]]
    probes = [" ".join(p.contents.split()[:12]) for p in store.get(rng.sample(range(store.count), count))]
    sets = {"medqa question": [e.question for e in questions], "question + options": options,
            "12-word probe (earlier docs)": probes}
    if hplus:
        sets["CHR H+ (real runs)"] = hplus
    return sets


class Tantivy:
    """tantivy over the store's rows: English stemmer, tantivy's BM25 (k1 = 1.2, b = 0.75), built on two indexing
    threads. Queries drop bm25s's English stopwords first, as hyporag's BM25 does (the index keeps them)."""

    def __init__(self, store: PassageStore, directory: Path) -> None:
        import tantivy
        from bm25s.stopwords import STOPWORDS_EN

        self.tantivy, self.stopwords = tantivy, set(STOPWORDS_EN)
        builder = tantivy.SchemaBuilder()
        builder.add_integer_field("row", stored=True, fast=True)
        builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        started = time.perf_counter()
        self.index = tantivy.Index(builder.build(), path=str(directory))
        writer = self.index.writer(heap_size=1_000_000_000, num_threads=2)  # both cores, as bm25s builds
        row = 0
        for batch in store.texts(20_000):
            for text in batch:
                writer.add_document(tantivy.Document(row=row, body=text))
                row += 1
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.build_seconds = time.perf_counter() - started
        self.searcher = self.index.searcher()
        self.disk = sum(f.stat().st_size for f in directory.rglob("*") if f.is_file())

    def search(self, text: str) -> list[int]:
        words = re.sub(r"[^\w\s]", " ", text).lower().split()  # no query syntax: lower case has no AND / OR / NOT
        cleaned = " ".join(w for w in words if w not in self.stopwords) or " ".join(words)
        hits = self.searcher.search(self.index.parse_query(cleaned, ["body"]), K).hits
        return [self.searcher.doc(address)["row"][0] for _, address in hits]


class Pisa:
    """PISA through pyterrier-pisa: block-max WAND over compressed postings, BM25 with k1 = 1.5, b = 0.75 (ours),
    Porter2 stemming, its own stopword list; searched as a user calls it (`bm25(...).search`, a DataFrame)."""

    def __init__(self, store: PassageStore, directory: Path) -> None:
        import pyterrier_pisa

        shutil.rmtree(directory, ignore_errors=True)
        started = time.perf_counter()
        index = pyterrier_pisa.PisaIndex(str(directory), stemmer="porter2", overwrite=True, threads=2)
        texts = [text for batch in store.texts(20_000) for text in batch]  # read here: PISA reads from its threads
        index.index({"docno": str(row), "text": text} for row, text in enumerate(texts))
        if index.num_docs() != store.count:
            raise RuntimeError(f"pisa indexed {index.num_docs()} of {store.count} passages")
        self.build_seconds = time.perf_counter() - started
        self.retriever = index.bm25(k1=1.5, b=0.75, num_results=K)
        self.disk = sum(f.stat().st_size for f in directory.rglob("*") if f.is_file())

    def search(self, text: str) -> list[int]:
        cleaned = re.sub(r"[^\w\s]", " ", text).lower()
        return [int(d) for d in self.retriever.search(cleaned)["docno"]]


def timed(search, queries: list[str]) -> tuple[list[float], float, list[list[int]]]:
    started = time.perf_counter()
    first = search(queries[0])
    cold = (time.perf_counter() - started) * 1000
    for q in queries[:WARM]:
        search(q)
    times, found = [], [first]
    for q in queries[1:]:
        started = time.perf_counter()
        found.append(search(q))
        times.append((time.perf_counter() - started) * 1000)
    return times, cold, found


def overlap(a: list[int], b: list[int]) -> float:
    return len(set(a) & set(b)) / max(1, len(set(b)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", type=Path, required=True, help="a built BM25 index (hyporag index build)")
    parser.add_argument("--chr-runs", type=Path, nargs="*", default=[], help="results directories with chr rows")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("runs/bm25-engines"))
    parser.add_argument("--extra-path", help="a --target folder holding pyterrier-pisa, searched after the venv's "
                                             "packages (its pins clash with MLflow's)")
    args = parser.parse_args(argv)
    if args.extra_path:
        sys.path.append(args.extra_path)
    import bm25s

    store = PassageStore(args.index_dir / PassageStore.FILENAME)
    ours = BM25Index.load(args.index_dir / BM25Index.DIRNAME)
    manifest = json.loads((args.index_dir / "manifest.json").read_text())
    tv = Tantivy(store, args.work / "tantivy")

    def bm25s_own(text: str) -> list[int]:
        tokens = bm25s.tokenize([text], stopwords="en", stemmer=ours.stemmer, show_progress=False)
        rows, _ = ours.model.retrieve(tokens, k=K, n_threads=1, show_progress=False)
        return [int(r) for r in rows[0]]

    engines = {"hyporag loop": lambda t: [int(r) for r in ours.search_many([t], K)[0][0] if r >= 0],
               "bm25s retrieve": bm25s_own, "tantivy": tv.search}
    try:
        pisa = Pisa(store, args.work / "pisa")
        engines["pisa"] = pisa.search
    except ImportError as exc:  # pyterrier-pisa's wheel links libtbb.so.2 (LD_LIBRARY_PATH to tbb<2021's lib)
        print(f"pisa: not measured ({exc})", file=sys.stderr)
        pisa = None
    bm25_disk = sum(f.stat().st_size for f in (args.index_dir / BM25Index.DIRNAME).rglob("*") if f.is_file())
    builds = {"hyporag loop": (manifest["parts"]["bm25"]["seconds"], bm25_disk),
              "bm25s retrieve": (manifest["parts"]["bm25"]["seconds"], bm25_disk),
              "tantivy": (round(tv.build_seconds, 1), tv.disk)}
    if pisa:
        builds["pisa"] = (round(pisa.build_seconds, 1), pisa.disk)
    print(f"{store.count:,} passages; tantivy built in {tv.build_seconds:.1f} s\n")
    print("| query set | n | engine | p50 ms | p95 ms | first query ms | build s | disk MB | top-15 overlap vs bm25s |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for name, queries in query_sets(store, args.queries, args.chr_runs).items():
        times: dict[str, list[float]] = {e: [] for e in engines}
        found: dict[str, list[list[int]]] = {}
        cold: dict[str, float] = {}
        for round_ in range(args.rounds):
            for engine in (list(engines) if round_ % 2 == 0 else list(engines)[::-1]):
                t, c, f = timed(engines[engine], queries)
                times[engine] += t
                cold.setdefault(engine, c)
                found.setdefault(engine, f)
        for engine in engines:
            p = sorted(times[engine])
            same = statistics.mean(overlap(a, b) for a, b in zip(found[engine], found["bm25s retrieve"], strict=True))
            seconds, disk = builds[engine]
            p95 = p[int(0.95 * (len(p) - 1))]
            print(f"| {name} | {len(queries)} | {engine} | {statistics.median(p):.1f} | {p95:.1f} "
                  f"| {cold[engine]:.1f} | {seconds} | {disk / 1e6:.0f} | {same:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
