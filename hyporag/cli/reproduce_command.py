"""`hyporag reproduce TABLE`: rerun a table of the HCQR or CHR paper with your LMs, printed beside the paper's."""

from __future__ import annotations

import argparse

from hyporag.cli.common import add_model_and_program_args, add_run_args, add_settings, load_settings
from hyporag.foundation.errors import ConfigError
from hyporag.jobs.reproduce import list_tables, reproduce
from hyporag.jobs.settings import ReproduceSettings
from hyporag.reproduction.paper_tables import TABLES


def add_parser(sub) -> None:
    rep = sub.add_parser("reproduce", help="rerun a table of the HCQR or CHR paper and print it beside the paper's")
    rep.add_argument("table", nargs="?", help=f"one of {', '.join(TABLES)}")
    rep.add_argument("--list", action="store_true", help="list the tables, their grids and what each needs")
    add_settings(rep, ReproduceSettings)
    add_model_and_program_args(rep)
    add_run_args(rep, None)


def run(args: argparse.Namespace) -> int:
    if args.list:
        print(list_tables())
        return 0
    if not args.table:
        raise ConfigError("reproduce: name a table (hyporag reproduce --list shows them)")
    config, settings = load_settings(args, ReproduceSettings, {"table": args.table})
    result = reproduce(settings, config.replace(out=None))
    print(result.table)
    print(f"written: {result.root}/table.md, table.json; each cell's rows and report under "
          f"{result.root}/<dataset>-<setting>/")
    return 0
