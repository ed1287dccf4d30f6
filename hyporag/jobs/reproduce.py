"""`hyporag.reproduce`: rerun one of the papers' tables with your LMs and set it beside the paper's.

Each grid cell (a dataset under one of the table's settings) is an ordinary evaluation in its own results
directory, so an interrupted table resumes cell by cell and question by question, and `hyporag report` reads any
cell. The table itself is redrawn from the cells' reports into `<out>/<table>/table.md` and `table.json`.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from hyporag.eval.shards import merge_runs
from hyporag.foundation.atomic import write_json_atomic, write_text_atomic
from hyporag.foundation.errors import ConfigError
from hyporag.jobs.evaluate import evaluate, log_evaluation
from hyporag.jobs.run_config import DEFAULT_CORPUS, RunConfig
from hyporag.jobs.settings import EvalSettings, ReproduceSettings
from hyporag.jobs.tracking import tracked_job
from hyporag.reproduction.paper_tables import TABLES, PaperTable, paper, table
from hyporag.reproduction.report import Cell, markdown


@dataclass
class ReproduceResult:
    root: Path  # <out>/<table>/: table.md, table.json and one results directory per cell
    table: str  # the markdown table, ours beside the paper's
    cells: list[Cell]


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


def _subset(chosen: tuple[str, ...] | None, allowed: tuple[str, ...], what: str, name: str) -> tuple[str, ...]:
    if not chosen:
        return allowed
    strange = [x for x in chosen if x not in allowed]
    if strange:
        raise ConfigError(f"{name}: no {what} {', '.join(strange)} in this table (it has {', '.join(allowed)})")
    return tuple(chosen)


def cell_config(t: PaperTable, run: RunConfig, dataset: str, variant, methods: tuple[str, ...],
                out: Path) -> RunConfig:
    """A cell's run: the table's paper settings, then the variant's, then whatever the user set (which wins)."""
    user_run = {k: run.setting(k) for k in variant.run if k in run.sources}
    return run.replace(
        dataset=dataset, methods=",".join(methods), out=str(out), dur=t.dur or run.control.dur, program=None,
        **{**variant.run, **user_run},
        program_settings={**t.program_settings(), **variant.program, **run.program_settings})


def reproduce(settings: ReproduceSettings, run: RunConfig | None = None, roles=None) -> ReproduceResult:
    """Every cell of the table (resuming), then the table; `roles` serve every cell (default: the run's LMs). With
    `run.tracking.track`, one MLflow run: each cell's metrics under its name, its files in its folder, the table."""
    run = run or RunConfig()
    root = Path(settings.out) / (settings.table or "")
    with tracked_job(run, "reproduce", settings, root if settings.table else None) as tracker:
        result = _reproduce(settings, run.replace(track=None), roles, tracker)
        if tracker:
            tracker.artifacts(result.root, names=("table.md", "table.json"))
    return result


def _reproduce(settings: ReproduceSettings, run: RunConfig, roles, tracker) -> ReproduceResult:
    if not settings.table:
        raise ConfigError("reproduce: name a table (hyporag reproduce --list shows them)")
    t = table(settings.table)
    datasets = _subset(settings.datasets, t.datasets, "dataset", t.name)
    methods = _subset(settings.methods, t.methods, "method", t.name)
    if t.kind in ("accuracy", "dur") and t.baseline not in methods:
        methods = (t.baseline, *methods)  # the paired tests need the baseline on the same questions
    root = Path(settings.out) / t.name
    cells = []
    for variant in t.variants:
        for dataset in datasets:
            out = root / f"{dataset}-{variant.label}"
            print(f"reproduce {t.name}: {dataset} ({variant.label}) → {out}", file=sys.stderr)
            result = evaluate(cell_config(t, run, dataset, variant, methods, out), EvalSettings(shard=settings.shard),
                              roles=roles)
            cells.append(Cell(dataset, variant.label, result.report, result.dataset_size))
            if tracker:
                log_evaluation(tracker, result.report, out, prefix=f"{out.name}/", under=out.name)
    return _write_table(t, root, cells, run.data.corpus or DEFAULT_CORPUS, settings.shard)


def _write_table(t: PaperTable, root: Path, cells: list[Cell], corpus: str, shard: str | None = None,
                 merged_from: list[str] | None = None) -> ReproduceResult:
    text = markdown(t, cells, corpus)
    write_text_atomic(root / "table.md", text)
    write_json_atomic(root / "table.json", {"table": t.name, "corpus": corpus, "shard": shard,
                                            **({"merged_from": merged_from} if merged_from else {}), "cells": [
        {"dataset": c.dataset, "variant": c.variant, "dataset_size": c.dataset_size,
         "results": str(root / f"{c.dataset}-{c.variant}")} for c in cells]})
    return ReproduceResult(root, text, cells)


def merge_tables(roots: list[str | Path], out: str | Path) -> ReproduceResult:
    """Shards of one `reproduce` (each `<out>/<table>/` of a `--shard I/N` run) merged cell by cell into
    `<out>/<table>/`, and the table redrawn from the merged cells."""

    tables = []
    for root in map(Path, roots):
        path = root / "table.json"
        if not path.is_file():
            raise ConfigError(f"{root}: no table.json; give each shard's <out>/<table> directory")
        tables.append(json.loads(path.read_text(encoding="utf-8")))
    names = {t["table"] for t in tables}
    cell_names = [[Path(c["results"]).name for c in t["cells"]] for t in tables]
    if len(names) > 1 or any(cells != cell_names[0] for cells in cell_names):
        raise ConfigError(f"{roots[0]}: these shards ran different tables or cells; shards of one reproduce only")
    t = table(names.pop())
    root = Path(out) / t.name
    cells = []
    for position, entry in enumerate(tables[0]["cells"]):
        name = Path(entry["results"]).name
        print(f"merge {t.name}: {name}", file=sys.stderr)
        report = merge_runs([Path(r) / name for r in roots], root / name)
        cells.append(Cell(entry["dataset"], entry["variant"], report, tables[0]["cells"][position]["dataset_size"]))
    return _write_table(t, root, cells, tables[0].get("corpus") or DEFAULT_CORPUS,
                        merged_from=[str(r) for r in roots])
