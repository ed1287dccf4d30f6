"""`hyporag embed --corpus C --embedder E --out VECDIR [--ray ADDRESS]`: passage vectors in shards, resumable, for
`hyporag index build --vectors VECDIR`."""

from __future__ import annotations

import argparse

from hyporag.cli.common import add_data_args, load_settings
from hyporag.jobs.embed import embed
from hyporag.jobs.settings import EmbedSettings


def add_parser(sub) -> None:
    cmd = sub.add_parser("embed", help="embed a corpus's passages in shards (here, or on a Ray cluster)")
    add_data_args(cmd)
    cmd.add_argument("--corpus", help="corpus name or JSONL path (default medcorp-local)")
    cmd.add_argument("--embedder", help="encoder: minilm (default), medcpt, bge-large, e5-large-v2, a "
                     "sentence-transformers name or path, or a JSON file of encoder-spec fields")
    cmd.add_argument("--out", help="the vectors folder (re-running the same command resumes it)")
    cmd.add_argument("--ray", metavar="ADDRESS", help="run on a Ray cluster: auto, host:6379 or ray://host:10001 "
                     "(needs pip install 'hyporag[ray]' on every node)")
    cmd.add_argument("--concurrency", type=int, help="Ray actors, each with its own encoder (default 2)")
    cmd.add_argument("--cpus-per-actor", type=float, help="CPUs each Ray actor reserves (default 1)")
    cmd.add_argument("--gpus-per-actor", type=float, help="GPUs each Ray actor reserves (default 0; 1 on GPU nodes)")
    cmd.add_argument("--processes", type=int, help="without --ray: sentence-transformers processes on this machine "
                     "(one per GPU, or CPU processes; default 1)")
    cmd.add_argument("--shard-size", type=int, help="passages a shard, the unit of resuming (default 10000)")
    cmd.add_argument("--batch-size", type=int, help="passages an encoder call (default 64)")
    cmd.add_argument("--window", type=int, help="passages handed to Ray at a time (default 100000)")
    cmd.add_argument("--max-seq-length", type=int, help="truncate passages for the encoder (MiniLM default 256)")
    cmd.add_argument("--max-passage-chars", type=int, help="split longer passages as index build does "
                     "(default 1800; give index build the same)")


def run(args: argparse.Namespace) -> int:
    config, settings = load_settings(args, EmbedSettings)
    report = embed(settings, config)
    print(report.describe())
    print(f"next: hyporag index build --corpus {config.data.corpus or 'medcorp-local'} --vectors {report.out} "
          f"--embedder {config.index.embedder or 'minilm'} --retriever both")
    return 0
