"""One llama.cpp server against two behind one run: the same questions, wall clock side by side, in one process.

Two real llama.cpp HTTP servers on 127.0.0.1 (the embedded GGUF model, one thread each) are started once. The
questions are cut into two shards and run in the order one, two, two, one (ABBA), so a drift in the machine's
speed lands on both variants alike; DSPy's cache is off. "one" sends every call to the first server, "two" to
both through the pool. Each variant's shards are merged into one run, so its rows and calls per endpoint can be
read afterwards.

    .venv/bin/python bench/server_pool_ab.py --dataset medqa-dev --questions 16 --methods cot,rag,chr \
        --out runs/server-pool
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import hyporag
from hyporag import EvalSettings, RunConfig
from hyporag.eval import read_results
from hyporag.lm import build_lm, engine_of
from hyporag.testing import ALIAS, llama_server


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="medqa-dev")
    parser.add_argument("--questions", type=int, default=16)
    parser.add_argument("--methods", default="cot,rag,chr")
    parser.add_argument("--index-dir", help="a BM25 index of medcorp-local (default: the cache's)")
    parser.add_argument("--out", default="runs/server-pool")
    args = parser.parse_args()
    out = Path(args.out)
    model = engine_of(build_lm("local:qwen2.5-coder-1.5b")).model_path  # the embedded model's GGUF file
    with ExitStack() as stack:
        bases = [stack.enter_context(llama_server(model, threads=1))[1] for _ in range(2)]
        print(f"servers: {', '.join(bases)} (one thread each)", file=sys.stderr)
        base = RunConfig(dataset=args.dataset, methods=args.methods, limit=args.questions, seed=0,
                         lm=f"openai/{ALIAS}", api_key="none", no_cache=True, threads=2, retriever="bm25",
                         index_dir=args.index_dir, program_settings={"budget": 4, "protocol": "fast"})
        variants = {"one": base.replace(api_bases=bases[:1]), "two": base.replace(api_bases=bases)}
        seconds = {"one": 0.0, "two": 0.0}
        for variant, shard in (("one", 1), ("two", 1), ("two", 2), ("one", 2)):
            started = time.perf_counter()
            hyporag.evaluate(variants[variant].replace(out=str(out / f"{variant}-shard{shard}")),
                             EvalSettings(shard=f"{shard}/2"))
            seconds[variant] += time.perf_counter() - started
            print(f"{variant} shard {shard}/2: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    table = {}
    for variant in variants:
        merged = out / variant
        report = hyporag.merge_runs([out / f"{variant}-shard{i}" for i in (1, 2)], merged)
        served: dict[str, int] = {}
        for shard in (1, 2):
            settings = json.loads((out / f"{variant}-shard{shard}" / "run.json").read_text())
            for entry in (settings.get("endpoints") or {}).values():
                for endpoint, usage in entry["endpoints"].items():
                    served[endpoint] = served.get(endpoint, 0) + usage["calls"]
        rows = read_results(merged)
        table[variant] = {"seconds": round(seconds[variant], 1), "rows": len(rows),
                          "errors": sum(bool(r.get("error")) for r in rows),
                          "accuracy": {m["method"]: m["accuracy"] for m in report["methods"]},
                          "calls_per_endpoint": served or {bases[0]: sum(r.get("calls", 0) for r in rows)}}
    table["ratio_one_over_two"] = round(table["one"]["seconds"] / table["two"]["seconds"], 2)
    (out / "ab.json").write_text(json.dumps(table, indent=2))
    print(json.dumps(table, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
