"""`hyporag reproduce TABLE`: rerun one of the papers' tables with the user's LMs and print it beside the paper's.

Each grid cell (a dataset under one of the table's settings) is an ordinary evaluation in its own results
directory, so an interrupted table resumes cell by cell and question by question, and `hyporag report` reads any
cell. The table itself is redrawn from the cells' reports into `<out>/<table>/table.md` and `table.json`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hyporag.atomic import write_json_atomic, write_text_atomic
from hyporag.cli_commands import run_methods
from hyporag.errors import ConfigError
from hyporag.eval.paper_tables import TABLES, PaperTable, paper, table
from hyporag.eval.reproduce_report import Cell, markdown
from hyporag.run_config import DEFAULT_CORPUS, RunConfig


def add_reproduce_parser(sub) -> argparse.ArgumentParser:
    """The command's own arguments; the caller adds the shared model, program and run flags."""
    rep = sub.add_parser("reproduce", help="rerun a table of the HCQR or CHR paper and print it beside the paper's")
    rep.add_argument("table", nargs="?", help=f"one of {', '.join(TABLES)}")
    rep.add_argument("--list", action="store_true", help="list the tables, their grids and what each needs")
    rep.add_argument("--datasets", help="run only these of the table's datasets (comma-separated)")
    rep.add_argument("--methods", help="run only these of the table's methods (comma-separated)")
    rep.add_argument("--out", help="results root (default runs/reproduce); cells go to <out>/<table>/")
    return rep


def list_tables() -> str:
    lines = []
    for t in TABLES.values():
        settings = paper(t.paper)["settings"]
        variants = ", ".join(v.label for v in t.variants)
        lines.append(f"{t.name:12s} {t.title}")
        lines.append(f"{'':12s} datasets {', '.join(t.datasets)}; methods {', '.join(t.methods)}; settings "
                     f"{variants}; B={t.program_settings()['budget']} (paper: {settings.get('budget') or 'not held'})")
        if t.needs:
            lines.append(f"{'':12s} needs: {'; '.join(t.needs)}")
    return "\n".join(lines)


def _subset(given: str | None, allowed: tuple[str, ...], what: str, table_name: str) -> tuple[str, ...]:
    if not given:
        return allowed
    chosen = tuple(x.strip() for x in given.split(",") if x.strip())
    strange = [x for x in chosen if x not in allowed]
    if strange:
        raise ConfigError(f"{table_name}: no {what} {', '.join(strange)} in this table (it has {', '.join(allowed)})")
    return chosen


def cell_config(t: PaperTable, config: RunConfig, dataset: str, variant, methods: tuple[str, ...],
                out: Path) -> RunConfig:
    """A cell's run: the table's paper settings, then the variant's, then whatever the user set (which wins)."""
    user_run = {k: getattr(config, k) for k in variant.run if k in config.sources}
    return config.replace(
        dataset=dataset, methods=",".join(methods), out=str(out), dur=t.dur or config.dur, program=None,
        **{**variant.run, **user_run},
        program_settings={**t.program_settings(), **variant.program, **config.program_settings})


def cmd_reproduce(args: argparse.Namespace, config: RunConfig) -> int:
    if args.list:
        print(list_tables())
        return 0
    if not args.table:
        raise ConfigError("reproduce: name a table (hyporag reproduce --list shows them)")
    t = table(args.table)
    datasets = _subset(args.datasets, t.datasets, "dataset", t.name)
    given_methods = args.methods if config.sources.get("methods") == "command line" else None
    methods = _subset(given_methods, t.methods, "method", t.name)
    if t.kind in ("accuracy", "dur") and t.baseline not in methods:
        methods = (t.baseline, *methods)  # the paired tests need the baseline on the same questions
    root = Path(args.out or "runs/reproduce") / t.name
    cells = []
    for variant in t.variants:
        for dataset in datasets:
            out = root / f"{dataset}-{variant.label}"
            print(f"reproduce {t.name}: {dataset} ({variant.label}) → {out}", file=sys.stderr)
            report, _, size = run_methods(cell_config(t, config, dataset, variant, methods, out))
            cells.append(Cell(dataset, variant.label, report, size))
    text = markdown(t, cells, config.corpus or DEFAULT_CORPUS)
    write_text_atomic(root / "table.md", text)
    write_json_atomic(root / "table.json", {"table": t.name, "cells": [
        {"dataset": c.dataset, "variant": c.variant, "dataset_size": c.dataset_size,
         "results": str(root / f"{c.dataset}-{c.variant}")} for c in cells]})
    print(text)
    print(f"written: {root}/table.md, table.json; each cell's rows and report under {root}/<dataset>-<setting>/")
    return 0
