"""`hyporag embed --corpus C --embedder E --out VECDIR [--ray ADDRESS]`: passage vectors in shards, resumable, for
`hyporag index build --vectors VECDIR`."""

from __future__ import annotations

import argparse

from hyporag.cli.common import add_data_args, add_settings, load_settings
from hyporag.jobs.embed import embed
from hyporag.jobs.run_groups import DataSettings, IndexSettings
from hyporag.jobs.settings import EmbedSettings


def add_parser(sub) -> None:
    cmd = sub.add_parser("embed", help="embed a corpus's passages in shards (here, or on a Ray cluster)")
    add_data_args(cmd)
    add_settings(cmd, DataSettings, only=("corpus",), helps={"corpus": "corpus name or JSONL path (default "
                                                                 "medcorp-local)"})
    add_settings(cmd, IndexSettings, only=("embedder",), helps={"embedder": "encoder: minilm (default), medcpt, "
                 "bge-large, e5-large-v2, a sentence-transformers name or path, or a JSON file of encoder-spec fields"})
    add_settings(cmd, EmbedSettings)


def run(args: argparse.Namespace) -> int:
    config, settings = load_settings(args, EmbedSettings)
    report = embed(settings, config)
    print(report.describe())
    print(f"next: hyporag index build --corpus {config.data.corpus or 'medcorp-local'} --vectors {report.out} "
          f"--embedder {config.index.embedder or 'minilm'} --retriever both")
    return 0
