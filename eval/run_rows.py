"""A results directory's current rows, read one way by every reader (report, view, the regression gate, the stop
rule, merge, the plan): its settings, the last row of each (question, method) whose question is the one the run
asks now, and how far a run still appending has got."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hyporag.eval.packed import record_file
from hyporag.eval.results_store import ROWS, latest_rows, read_rows, read_run_settings
from hyporag.eval.row import say_distrusted
from hyporag.foundation.errors import HyporagError


def current_of(settings: dict[str, Any], rows: list[dict]) -> list[dict]:
    """The rows a reader of the run reads now: its methods' rows (any, when it names none) for the questions as the
    run asks them (all, when it records none)."""
    methods, fingerprints = set(settings.get("methods") or ()), settings.get("question_fingerprints")
    return [r for r in rows if (not methods or r["method"] in methods)
            and (fingerprints is None or r.get("question_fingerprint") == fingerprints.get(r["question_id"]))]


def _progress(rows: list[dict], methods: list[str]) -> dict[str, dict]:
    """Each method's own rows so far (a mid-run view: methods are at different questions, so not paired)."""
    out: dict[str, dict] = {}
    for method in methods:
        mine = [r for r in rows if r["method"] == method]
        scored = [r for r in mine if not r.get("error")]
        out[method] = {"rows": len(mine), "errors": len(mine) - len(scored),
                       "accuracy": sum(bool(r["correct"]) for r in scored) / len(scored) if scored else None}
    return out



def current_rows(out_dir: str | Path) -> tuple[dict, list[dict], list[str], dict | None]:
    """A results directory's settings, its current rows (a superseded or stale row left out), its methods, and, for
    a partial run, its coverage (with `complete`: the questions every method has finished)."""
    out_dir = Path(out_dir)
    rows_path = record_file(out_dir, ROWS)
    settings = read_run_settings(out_dir)
    if not rows_path.is_file():
        raise HyporagError(f"{rows_path}: not found; is {out_dir} a results directory of `hyporag eval`?")
    methods = list(settings.get("methods") or [])
    stored, damaged = read_rows(rows_path)
    rows = current_of(settings, latest_rows(stored))
    if damaged:
        print(f"{rows_path}:{damaged[0][0]}: {len(damaged)} damaged row(s) left out (not a result row, or a field of "
              "the wrong type)", file=sys.stderr)
    say_distrusted(rows_path, rows)
    methods = methods or list(dict.fromkeys(r["method"] for r in rows))
    finished: dict[str, set[str]] = {}
    for r in rows:
        finished.setdefault(r["question_id"], set()).add(r["method"])
    complete = {q for q, done in finished.items() if done >= set(methods)}
    planned = int(settings.get("n") or len(finished))
    coverage = None
    if len(complete) < planned:
        coverage = {"questions_complete": len(complete), "questions_planned": planned, "rows": len(rows),
                    "per_method": _progress(rows, methods), "complete": sorted(complete)}
    return settings, rows, methods, coverage
