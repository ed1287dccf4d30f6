"""Recall@15 of IVF-PQ against exact search on real passage vectors: one build, and one merged from shards.

Takes a vectors folder written by `hyporag embed` (real MiniLM vectors of medcorp-local), loads them in corpus
order into `<out>/dense/vectors.npy`, and builds three indexes there: flat (exact), IVF-PQ in one build, and IVF-PQ
trained once, added in 4 shards and merged with on-disk lists (`hyporag index faiss-*`'s code). Each build runs in
its own process so its peak RSS is its own. Queries are MedQA-US dev questions encoded by the same encoder's query
side. For each IVF-PQ index and nprobe: recall@15 of FAISS's own ranking (PQ codes) and of hyporag's search (its
shortlist of 15·4 re-scored exactly), and single-query p50 through hyporag's search path.

    .venv/bin/python bench/real_recall.py --vectors runs/vectors/medcorp-minilm --out runs/recall --queries 300
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

K = 15
BUILD = """
import json, resource, sys, time
from pathlib import Path
import faiss, numpy as np
from hyporag.retrieval.dense import build_faiss
from hyporag.retrieval import faiss_shards
dense, step = Path(sys.argv[1]), sys.argv[2]
started = time.perf_counter()
if step in ("flat", "ivfpq"):
    built = build_faiss(np.load(dense / "vectors.npy", mmap_mode="r"), step)
    faiss.write_index(built, str(dense / f"faiss-{step}.index"))
elif step == "train":
    faiss_shards.train(dense, "ivfpq")
elif step.startswith("add"):
    faiss_shards.add_shard(dense, "ivfpq", int(step[3:]), 4)
elif step == "merge":
    faiss_shards.merge(dense, "ivfpq", 4)
print(json.dumps({"seconds": round(time.perf_counter() - started, 2),
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
"""


def build(dense: Path, step: str) -> dict:
    done = subprocess.run([sys.executable, "-c", BUILD, str(dense), step], check=True, capture_output=True,
                          text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def load_vectors(vectors_dir: Path, dense: Path) -> tuple[int, int]:
    from hyporag.retrieval import VectorShards

    if (dense / "vectors.npy").is_file():
        shape = np.load(dense / "vectors.npy", mmap_mode="r").shape
        return int(shape[0]), int(shape[1])
    vectors, _ = VectorShards(vectors_dir, {"shard_size": 0}).read_all()
    dense.mkdir(parents=True, exist_ok=True)
    np.save(dense / "vectors.npy", vectors)
    return vectors.shape


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(f[f >= 0]) & set(t)) / len(t) for f, t in zip(found, truth, strict=True)]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors", required=True, help="a folder written by hyporag embed")
    parser.add_argument("--out", default="runs/recall")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--nprobe", default="1,2,4,8,16,32,64")
    args = parser.parse_args()
    import faiss

    from hyporag import load_benchmark
    from hyporag.retrieval import DenseIndex, EncoderSpec, default_nprobe, make_encoder

    out = Path(args.out)
    single, sharded = out / "single", out / "sharded"
    count, dimension = load_vectors(Path(args.vectors), single)
    sharded.mkdir(parents=True, exist_ok=True)
    if not (sharded / "vectors.npy").exists():
        (sharded / "vectors.npy").symlink_to((single / "vectors.npy").resolve())
    builds = {"flat": build(single, "flat"), "ivfpq single": build(single, "ivfpq")}
    steps = [build(sharded, s) for s in ("train", "add1", "add2", "add3", "add4", "merge")]
    builds["ivfpq sharded (train + 4 adds + merge)"] = {"seconds": round(sum(s["seconds"] for s in steps), 2),
                                                       "peak_rss_mb": max(s["peak_rss_mb"] for s in steps)}
    identity = json.loads((Path(args.vectors) / "embed.json").read_text())
    encoder = make_encoder(EncoderSpec.from_dict(identity["encoder"]))
    questions = [q.question for q in load_benchmark("medqa-dev").examples][:args.queries]
    queries = np.ascontiguousarray(encoder.encode_queries(questions), dtype=np.float32)
    flat = faiss.read_index(str(single / "faiss-flat.index"))
    faiss.omp_set_num_threads(1)
    truth = flat.search(queries, K)[1]
    rows = []
    for name, directory in (("single", single), ("sharded", sharded)):
        index = DenseIndex.load(directory, encoder, "ivfpq")
        ivf = faiss.extract_index_ivf(index.index)
        default = default_nprobe(ivf.nlist)
        for nprobe in sorted({*(int(x) for x in args.nprobe.split(",")), default}):
            ivf.nprobe = min(nprobe, ivf.nlist)
            raw = index.index.search(queries, K)[1]
            for query in queries[:20]:  # warm-up: the page cache and FAISS's first-call costs
                index.search_vectors(query[None], K)
            seconds = []
            found = []
            for query in queries:
                started = time.perf_counter()
                found.append(index.search_vectors(query[None], K)[0][0])
                seconds.append(time.perf_counter() - started)
            rows.append({"index": name, "lists": ivf.nlist, "nprobe": nprobe, "default": nprobe == default,
                         "recall_pq": round(recall(raw, truth), 4), "recall_hyporag": round(recall(np.array(found),
                                                                                                    truth), 4),
                         "p50_ms": round(1000 * float(np.median(seconds)), 3)})
            print(json.dumps(rows[-1]), file=sys.stderr)
    disk = {name: sum(p.stat().st_size for p in d.glob("faiss-ivfpq.*") if p.suffix in (".index", ".ivfdata"))
            for name, d in (("single", single), ("sharded", sharded))}
    result = {"passages": count, "dimension": dimension, "queries": len(queries), "k": K, "builds": builds,
              "ivfpq_bytes": disk, "rows": rows, "embed": json.loads((Path(args.vectors) / "embed-report.json")
                                                                    .read_text()),
              "bench_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    (out / "recall.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
