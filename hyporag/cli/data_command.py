"""`hyporag data list`: every dataset and corpus with its size and where it is read from."""

from __future__ import annotations

import argparse

from hyporag.cli.common import add_data_args
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.run_config import RunConfig
from hyporag.questions.datasets import BENCHMARKS, load_benchmark
from hyporag.retrieval.corpus import CORPORA, load_corpus
from hyporag.retrieval.hub_corpus import HUB_CORPORA


def add_parser(sub) -> None:
    data = sub.add_parser("data", help="datasets and corpora")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    listing = data_sub.add_parser("list", help="one line per dataset and corpus: name, records, source")
    add_data_args(listing)


def _describe_dataset(report) -> tuple[int, str]:
    return len(report.examples), report.source


def _describe_corpus(corpus) -> tuple[int, str]:
    return corpus.count(), f"{corpus.source} ({len(corpus.files)} files)"


def run(args: argparse.Namespace, config: RunConfig) -> int:
    loaders = [("dataset", n, lambda n: _describe_dataset(load_benchmark(n, config.data.data_dir))) for n in BENCHMARKS]
    loaders += [("corpus", n, lambda n: _describe_corpus(load_corpus(n, config.data.data_dir))) for n in CORPORA]
    for kind, name, describe in loaders:
        try:
            count, source = describe(name)
        except HyporagError as exc:
            count, source = "-", f"unavailable: {exc}"
        print(f"{kind:<8} {name:<14} {count:>6}  {source}")
    for name, hub_ids in HUB_CORPORA.items():  # listed, not downloaded: PubMed alone is 23.9M snippets
        if name not in CORPORA:
            print(f"{'corpus':<8} {name:<14} {'-':>6}  hub {', '.join(hub_ids)} (streamed into the cache on first use)")
    return 0
