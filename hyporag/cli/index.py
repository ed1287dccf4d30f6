"""`hyporag index build`: build (or resume building) a retrieval index of a corpus."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from hyporag.cli.common import add_data_args
from hyporag.errors import HyporagError
from hyporag.retrieval.dense import FAISS_KINDS
from hyporag.run_config import RunConfig


def add_parser(sub) -> None:
    index = sub.add_parser("index", help="retrieval indexes")
    index_sub = index.add_subparsers(dest="index_command", required=True)
    build = index_sub.add_parser("build", help="build (or resume building) an index")
    add_data_args(build)
    build.add_argument("--corpus", default="medcorp-local")
    build.add_argument("--retriever", choices=("bm25", "dense", "both"), help="default bm25 (both with --vectors)")
    build.add_argument("--index-dir")
    build.add_argument("--embedder", help="dense encoder: minilm (default), medcpt, bge-large, e5-large-v2, any "
                       "sentence-transformers name or path, or a JSON file of encoder-spec fields")
    build.add_argument("--faiss", default="flat", choices=FAISS_KINDS, help="flat (exact), hnsw, ivf, ivfpq (d/4 "
                       "bytes a vector, memory-mapped), opq-ivfpq (rotated first)")
    build.add_argument("--max-seq-length", type=int, help="truncate passages for the embedder (MiniLM default 256)")
    build.add_argument("--max-passage-chars", type=int, help="split longer passages at whitespace into <id>#n "
                       "(default 1800)")
    build.add_argument("--vectors", help="precomputed passage vectors (a folder of .npy shards with their ids, or "
                       "MedRAG's index/<encoder>/embedding folder) to use instead of embedding; give the --embedder "
                       "that made them")
    build.add_argument("--force", action="store_true", help="replace an index of another corpus in --index-dir")


def run(args: argparse.Namespace, config: RunConfig) -> int:
    from hyporag.retrieval import build_index, load_corpus
    from hyporag.retrieval.embedder import DEFAULT_EMBEDDER

    corpus = load_corpus(config.corpus or "medcorp-local", config.data_dir)
    started = time.perf_counter()
    retriever = args.retriever or ("both" if args.vectors else "bm25")
    if args.vectors and retriever == "bm25":
        raise HyporagError("index build: --vectors are dense vectors; use --retriever dense or both")
    directory = build_index(corpus, Path(config.index_dir) if config.index_dir else None, retriever=retriever,
                            embedder_name=config.embedder or DEFAULT_EMBEDDER, faiss_kind=config.faiss,
                            max_seq_length=args.max_seq_length, force=args.force,
                            vectors=Path(args.vectors) if args.vectors else None,
                            **({"max_passage_chars": args.max_passage_chars} if args.max_passage_chars else {}))
    print(f"index ready at {directory} ({time.perf_counter() - started:.1f} s)")
    return 0
