"""Where the two-stage BM25 search changes what a reader sees: the questions of a dataset whose top-B context
(rag's query: the question; B passages) differs between the exact and the two-stage search, written as a dataset
file so `hyporag eval` can answer exactly those questions both ways (on every other question the context, hence
the prompt and the cached answer, is the same).

    .venv/bin/python bench/two_stage_contexts.py --dataset medqa-dev --budget 4 --out runs/two-stage/differ.jsonl
    for s in exact two-stage; do hyporag eval --dataset runs/two-stage/differ.jsonl --methods rag --budget 4 \\
        --bm25-search $s --out runs/two-stage/$s; done
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hyporag import load_benchmark
from hyporag.retrieval import default_index_dir, load_corpus, open_index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="medqa-dev")
    parser.add_argument("--corpus", default="medcorp-local")
    parser.add_argument("--budget", type=int, default=4)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    corpus = load_corpus(args.corpus)
    exact = open_index(default_index_dir(corpus), corpus=corpus, mode="bm25")
    two_stage = open_index(default_index_dir(corpus), corpus=corpus, mode="bm25", bm25_search="two-stage")
    examples = load_benchmark(args.dataset).examples
    differ, changed_passages, long_queries = [], 0, 0
    for example in examples:
        a = [h.id for h in exact.search(example.question, args.budget)]
        b = [h.id for h in two_stage.search(example.question, args.budget)]
        long_queries += exact.bm25.postings(example.question) >= 2 * exact.bm25.size
        if a != b:
            differ.append(example)
            changed_passages += len(set(a) - set(b))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps({"id": e.id, "question": e.question, "options": dict(e.options),
                                            "answer": e.answer}) + "\n" for e in differ))
    print(f"{args.dataset}: {len(examples)} questions, {long_queries} long enough for the two-stage path "
          f"(Σdf ≥ 2 postings per passage); top-{args.budget} context differs on {len(differ)} "
          f"({changed_passages} passages of {len(examples) * args.budget} replaced); written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
