"""Deciding with the fewest questions: `hyporag.compare(new_run, old_run)` (the regression gate of a CI job), and
the stop rule of `eval --until-decided`: after each question, every comparison (each method against the baseline,
or against itself in `--against`'s run) is read as confidence sequences; the run stops once all are decided.

    result = hyporag.compare("runs/today", "runs/last-release")
    result["comparisons"]["hcqr"]["outcome"]  # better, worse, equivalent, undecided (or mixed)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hyporag.eval.comparisons import ALPHA, paired_sequences
from hyporag.eval.regression import compare_rows, compare_runs, order_of
from hyporag.eval.results_store import read_run_settings
from hyporag.eval.run_report import current_rows
from hyporag.eval.sequential import DELTAS
from hyporag.foundation.atomic import write_json_atomic
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.settings import EvalSettings


def compare(run_a: str | Path, run_b: str | Path, alpha: float = ALPHA,
            deltas: dict[str, float] | None = None) -> dict[str, Any]:
    """Each method that both runs hold, run_a's rows against run_b's (a − b), paired by question: its outcome and
    the question it was decided at, the sequences on accuracy, log p(gold) and margin, and the fixed-n tests."""
    return compare_runs(run_a, run_b, alpha, deltas)


def deltas_of(settings: EvalSettings) -> dict[str, float]:
    return {**DELTAS, **({"accuracy": settings.delta} if settings.delta is not None else {}),
            **({"log_p_gold_clipped": settings.delta_lead} if settings.delta_lead is not None else {})}


def all_decided(sequences: dict[str, Any]) -> bool:
    comparisons = (sequences or {}).get("comparisons") or {}
    return bool(comparisons) and all(c["outcome"] != "undecided" for c in comparisons.values())


def stop_rule(settings: EvalSettings, methods: list[str], baseline: str, order: list[str],
              fingerprints: dict[str, str]) -> Callable[[list[dict]], bool]:
    """The `until` of an `--until-decided` run: True once every comparison is decided on the rows so far (the
    questions every method has answered, in the run's seeded order)."""
    deltas = deltas_of(settings)

    def current(rows: list[dict]) -> list[dict]:
        return [r for r in rows if r["method"] in methods
                and r.get("question_fingerprint") == fingerprints.get(r["question_id"])]

    if settings.against:
        _, old_rows, _, _ = current_rows(settings.against)
        by_fingerprint = [fingerprints[q] for q in order if q in fingerprints]

        def against_old(rows: list[dict]) -> bool:
            return all_decided(compare_rows(current(rows), old_rows, by_fingerprint, settings.alpha, deltas))

        return against_old
    if baseline not in methods:
        raise HyporagError(f"--until-decided compares every method with the baseline ({baseline}), which this run "
                           f"does not have ({', '.join(methods)}); add it to --methods, set --baseline, or give "
                           "--against an earlier run")

    def decided(rows: list[dict]) -> bool:
        return all_decided(paired_sequences(current(rows), baseline, order, settings.alpha, deltas))

    return decided


def record_stop(out: Path, rows: list[dict], methods: list[str], decided: bool) -> dict[str, Any]:
    """run.json's account of an `--until-decided` run once it stops: the questions every method answered (the run's
    n from now on, so its report is of a finished run), and why it stopped."""
    settings = read_run_settings(out)
    finished: dict[str, set[str]] = {}
    for row in rows:
        finished.setdefault(row["question_id"], set()).add(row["method"])
    asked = [q for q in settings.get("question_fingerprints") or {} if finished.get(q, set()) >= set(methods)]
    rule = {**(settings.get("sequential") or {}), "stopped_at": len(asked),
            "reason": "every comparison decided" if decided else "the question list or --max-questions ended first"}
    kept = {q: f for q, f in (settings.get("question_fingerprints") or {}).items() if q in set(asked)}
    write_json_atomic(out / "run.json", {**settings, "n": len(asked), "question_fingerprints": kept,
                                         "sequential": rule})
    return rule


__all__ = ["compare", "order_of", "record_stop", "stop_rule"]
