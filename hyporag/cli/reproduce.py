"""`hyporag reproduce TABLE`: rerun a table of the HCQR or CHR paper with your LMs, printed beside the paper's."""

from __future__ import annotations

import argparse

from hyporag.cli.common import add_model_and_program_args, add_run_args, load_settings
from hyporag.foundation.errors import ConfigError
from hyporag.jobs.reproduce import list_tables, reproduce
from hyporag.jobs.settings import ReproduceSettings
from hyporag.reproduction.paper_tables import TABLES


def add_parser(sub) -> None:
    rep = sub.add_parser("reproduce", help="rerun a table of the HCQR or CHR paper and print it beside the paper's")
    rep.add_argument("table", nargs="?", help=f"one of {', '.join(TABLES)}")
    rep.add_argument("--list", action="store_true", help="list the tables, their grids and what each needs")
    rep.add_argument("--datasets", help="run only these of the table's datasets (comma-separated)")
    rep.add_argument("--methods", help="run only these of the table's methods (comma-separated)")
    rep.add_argument("--out", help="results root (default runs/reproduce); cells go to <out>/<table>/")
    rep.add_argument("--shard", metavar="I/N", help="every cell on every N-th question from the I-th (give each "
                     "shard its own --out; hyporag merge joins them)")
    add_model_and_program_args(rep)
    add_run_args(rep, None)


def _names(text: str | None) -> tuple[str, ...] | None:
    return tuple(x.strip() for x in text.split(",") if x.strip()) if text else None


def run(args: argparse.Namespace) -> int:
    if args.list:
        print(list_tables())
        return 0
    if not args.table:
        raise ConfigError("reproduce: name a table (hyporag reproduce --list shows them)")
    methods = args.methods
    args.methods = None  # the table's methods, not the run's `methods` setting
    config, settings = load_settings(args, ReproduceSettings, {
        "table": args.table, "datasets": _names(args.datasets), "methods": _names(methods),
        "out": args.out or None})
    result = reproduce(settings, config.replace(out=None))
    print(result.table)
    print(f"written: {result.root}/table.md, table.json; each cell's rows and report under "
          f"{result.root}/<dataset>-<setting>/")
    return 0
