"""Contrastive vs plain dense query with inputs of equal length: the query (question + gold option) against the
pair (question + gold option, question + a distractor). Separates the encoder's cost from the search's.
    .venv/bin/python bench/contrastive_like_for_like.py --queries 100
"""

from __future__ import annotations

import argparse
import json

from retrieval_bench import per_query_ms  # same timing helper, same directory

from hyporag import load_benchmark
from hyporag.retrieval import WeightedQuery, default_index_dir, load_corpus, open_index


def contrast(retriever, plus: str, minus: str, lam: float, k: int, mode: str | None = None):
    """sim(d, plus) − λ·sim(d, minus): one weighted query."""
    return retriever.search_weighted([WeightedQuery.difference(plus, minus, lam)], k, mode=mode)[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    corpus = load_corpus("medcorp-local")
    retriever = open_index(default_index_dir(corpus), corpus=corpus, faiss_kind="flat")
    examples = load_benchmark("medqa-dev").examples[: args.queries]
    pairs = [(f"{e.question} {e.options[e.answer]}",
              f"{e.question} {next(t for x, t in e.options.items() if x != e.answer)}") for e in examples]
    retriever.search(pairs[0][0], 15, mode="dense")
    plain = per_query_ms(lambda p: retriever.search(p[0], 15, mode="dense"), pairs)
    contrastive = per_query_ms(lambda p: contrast(retriever, p[0], p[1], 1.0, 15, mode="dense"), pairs)
    vectors = [retriever.encode(list(p)) for p in pairs]
    search_plain = per_query_ms(lambda v: retriever.dense.search_vectors(v[:1], 15), vectors)
    search_contrastive = per_query_ms(
        lambda v: retriever.dense.search_vectors((v[0] - v[1])[None, :], 15), vectors)
    print(json.dumps({"plain_ms": plain, "contrastive_ms": contrastive, "ratio": contrastive / plain,
                      "search_only_plain_ms": search_plain, "search_only_contrastive_ms": search_contrastive,
                      "search_only_ratio": search_contrastive / search_plain}, indent=2))


if __name__ == "__main__":
    main()
