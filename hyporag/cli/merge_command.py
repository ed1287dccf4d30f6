"""`hyporag merge SHARD_DIR... --out DIR`: the shards of one `eval --shard I/N` (or `reproduce --shard I/N`) run
joined into one results directory, reported as the unsharded run would be."""

from __future__ import annotations

import argparse
from pathlib import Path

from hyporag.eval.run_report import markdown
from hyporag.eval.shards import merge_runs
from hyporag.foundation.errors import ConfigError
from hyporag.jobs.reproduce import merge_tables


def add_parser(sub) -> None:
    merge = sub.add_parser("merge", help="join the shards of one sharded eval (or reproduce) into one run")
    merge.add_argument("shards", nargs="+", help="every shard's results directory (a reproduce's <out>/<table>)")
    merge.add_argument("--out", required=True, help="the merged directory (new, or an earlier merge)")


def run(args: argparse.Namespace) -> int:
    tables = [(Path(d) / "table.json").is_file() for d in args.shards]
    if any(tables) and not all(tables):
        raise ConfigError("merge: give either eval shards or reproduce shards (<out>/<table>), not both")
    if all(tables):
        result = merge_tables(args.shards, args.out)
        print(result.table)
        print(f"written: {result.root}/table.md, table.json; each cell under {result.root}/<dataset>-<setting>/")
        return 0
    report = merge_runs(args.shards, args.out)
    print(markdown(report))
    print(f"merged {len(args.shards)} shards: {args.out}/results.jsonl, run.json, summary.json, summary.md, "
          "summary.csv, report.html")
    return 0
