"""`hyporag index build`: build (or resume building) a retrieval index of a corpus."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from hyporag.cli.common import add_data_args
from hyporag.eval.shards import Shard
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.run_config import RunConfig
from hyporag.retrieval import build_index, load_corpus
from hyporag.retrieval.bm25 import SEARCHES as BM25_SEARCHES
from hyporag.retrieval.bm25_engines import CHOICES as BM25_CHOICES
from hyporag.retrieval.bm25_engines import TANTIVY_FROM
from hyporag.retrieval.dense import FAISS_KINDS
from hyporag.retrieval.embedder import DEFAULT_EMBEDDER
from hyporag.retrieval.faiss_shards import add_shard, merge_into_index, train


def add_parser(sub) -> None:
    index = sub.add_parser("index", help="retrieval indexes")
    index_sub = index.add_subparsers(dest="index_command", required=True)
    build = index_sub.add_parser("build", help="build (or resume building) an index")
    add_data_args(build)
    build.add_argument("--corpus", default="medcorp-local")
    build.add_argument("--retriever", dest="build_retriever", choices=("bm25", "dense", "both"),
                       help="default bm25 (both with --vectors)")
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
    build.add_argument("--bm25-engine", choices=BM25_CHOICES, help="BM25 engine: bm25s (exact scores over every "
                       "passage), tantivy (block-max WAND), or auto (default: tantivy from "
                       f"{TANTIVY_FROM:,} passages on, where bm25s's arrays would outgrow half of this machine's "
                       "RAM; bm25s below)")
    build.add_argument("--bm25-search", choices=BM25_SEARCHES, help="two-stage also writes the forward index the "
                       "two-stage search rescores from (as large as the BM25 part; exact, the default, needs none)")
    build.add_argument("--force", action="store_true", help="replace an index of another corpus in --index-dir, or "
                       "a BM25 part another engine built")
    for name, what in (("faiss-train", "train an IVF kind once on the seeded sample (the first step of a sharded "
                        "build)"), ("faiss-add", "add shard I/N of the vectors to the trained index (any machine "
                                    "holding the index directory)"),
                       ("faiss-merge", "merge the N shards into one index with on-disk, memory-mapped lists")):
        step = index_sub.add_parser(name, help=what)
        step.add_argument("--index-dir", required=True, help="an index with dense vectors")
        step.add_argument("--faiss", default="ivfpq", choices=("ivf", "ivfpq", "opq-ivfpq"))
        if name == "faiss-add":
            step.add_argument("--shard", required=True, metavar="I/N")
        if name == "faiss-merge":
            step.add_argument("--shards", required=True, type=int, metavar="N")


def run_sharded_faiss(args: argparse.Namespace) -> int:
    """The three steps of a sharded FAISS build: train once, add each shard anywhere, merge."""

    dense = Path(args.index_dir) / "dense"
    if not (dense / "vectors.npy").is_file():
        raise HyporagError(f"{args.index_dir}: no dense vectors (dense/vectors.npy); build them first")
    started = time.perf_counter()
    if args.index_command == "faiss-train":
        written = train(dense, args.faiss)
    elif args.index_command == "faiss-add":
        shard = Shard.parse(args.shard)
        written = add_shard(dense, args.faiss, shard.index, shard.count)
    else:
        written = merge_into_index(Path(args.index_dir), args.faiss, args.shards)
    print(f"written: {written} ({time.perf_counter() - started:.1f} s)")
    return 0


def run(args: argparse.Namespace, config: RunConfig) -> int:
    corpus = load_corpus(config.data.corpus or "medcorp-local", config.data.data_dir)
    started = time.perf_counter()
    retriever = args.build_retriever or ("both" if args.vectors else "bm25")
    if args.vectors and retriever == "bm25":
        raise HyporagError("index build: --vectors are dense vectors; use --retriever dense or both")
    where_to = Path(config.index.index_dir) if config.index.index_dir else None
    directory = build_index(corpus, where_to, retriever=retriever,
                            embedder_name=config.index.embedder or DEFAULT_EMBEDDER, faiss_kind=config.index.faiss,
                            max_seq_length=args.max_seq_length, force=args.force,
                            vectors=Path(args.vectors) if args.vectors else None, bm25_engine=config.index.bm25_engine,
                            bm25_search=config.index.bm25_search or "exact",
                            **({"max_passage_chars": args.max_passage_chars} if args.max_passage_chars else {}))
    print(f"index ready at {directory} ({time.perf_counter() - started:.1f} s)")
    return 0
