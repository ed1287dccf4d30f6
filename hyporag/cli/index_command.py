"""`hyporag index build`: build (or resume building) a retrieval index of a corpus."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from hyporag.cli.common import add_data_args, add_settings, load_settings
from hyporag.eval.shards import Shard
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.index import index_corpus
from hyporag.jobs.run_groups import DataSettings, IndexSettings
from hyporag.jobs.settings import IndexBuildSettings
from hyporag.retrieval.bm25_engines import TANTIVY_FROM
from hyporag.retrieval.faiss_shards import add_shard, merge_into_index, train


def add_parser(sub) -> None:
    index = sub.add_parser("index", help="retrieval indexes")
    index_sub = index.add_subparsers(dest="index_command", required=True)
    build = index_sub.add_parser("build", help="build (or resume building) an index")
    add_data_args(build)
    add_settings(build, DataSettings, only=("corpus",), helps={"corpus": "corpus name or JSONL path/dir (default "
                                                                        "medcorp-local)"})
    add_settings(build, IndexSettings, only=("index_dir", "embedder", "faiss", "bm25_engine", "bm25_search"),
                 helps={"embedder": "dense encoder: minilm (default), medcpt, bge-large, e5-large-v2, any "
                                    "sentence-transformers name or path, or a JSON file of encoder-spec fields",
                        "faiss": "flat (exact, default), hnsw, ivf, ivfpq (d/4 bytes a vector, memory-mapped), "
                                 "opq-ivfpq (rotated first)",
                        "bm25_engine": "BM25 engine: bm25s (exact scores over every passage), tantivy (block-max "
                                       f"WAND), or auto (default: tantivy from {TANTIVY_FROM:,} passages on, where "
                                       "bm25s's arrays would outgrow half of this machine's RAM; bm25s below)",
                        "bm25_search": "two-stage also writes the forward index the two-stage search rescores from "
                                       "(as large as the BM25 part; exact, the default, needs none)"})
    add_settings(build, IndexBuildSettings)
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


def run(args: argparse.Namespace) -> int:
    config, settings = load_settings(args, IndexBuildSettings)
    result = index_corpus(settings, config)
    print(f"index ready at {result.directory} ({result.seconds:.1f} s)")
    return 0
