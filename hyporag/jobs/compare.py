"""Deciding with the fewest questions: `hyporag.compare(new_run, old_run)` (the regression gate of a CI job), and
the stop rule of `eval --until-decided`, which before each question reads the run's comparisons exactly as its
report will (hyporag.eval.decisions: the same methods, the same alpha split, each pair on what its two sides
answered) and stops once every comparison this invocation can still move is decided.

    result = hyporag.compare("runs/today", "runs/last-release")
    result["comparisons"]["hcqr"]["outcome"]  # better, worse, equivalent or undecided, on the deciding measure
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hyporag.eval.comparisons import ALPHA
from hyporag.eval.decisions import decisions_of
from hyporag.eval.regression import MIN_PAIRED, compare_runs, order_of
from hyporag.eval.run_rows import current_rows
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.settings import EvalSettings


def compare(run_a: str | Path, run_b: str | Path, alpha: float = ALPHA, delta: float | None = None,
            decide_on: str | None = None, min_paired: int = MIN_PAIRED) -> dict[str, Any]:
    """Each method that both runs hold, run_a's rows against run_b's (a − b), paired by question: its outcome and
    the question it was decided at on the deciding measure, the other measures beside it, and the fixed-n tests.
    Refused when no method pairs on `min_paired` questions."""
    settings = EvalSettings(alpha=alpha, delta=delta, decide_on=decide_on, min_paired=min_paired)
    return compare_runs(run_a, run_b, alpha, deltas_of(settings), decide_on, min_paired)


def deltas_of(settings: EvalSettings) -> dict[str, float]:
    """The equivalence margin a run gives its deciding measure, keyed by the measure (none given: its own)."""
    return {settings.deciding.name: settings.delta} if settings.delta is not None else {}


def sequential_record(settings: EvalSettings) -> dict[str, Any]:
    """run.json's `sequential`: the rule every reading of the run uses (the report, the page, a resume)."""
    return {"alpha": settings.alpha, "deltas": deltas_of(settings), "decide_on": settings.decide_on,
            "until_decided": settings.until_decided, "max_questions": settings.max_questions,
            **({"against": str(settings.against)} if settings.against else {})}


class StopRule:
    """The `until` of an `--until-decided` run: before each question, every comparison of the run read as the report
    reads it; True once each one whose two sides this invocation answers is decided (a comparison of methods it
    does not run cannot change, and shares alpha all the same)."""

    def __init__(self, settings: EvalSettings, methods: list[str], baseline: str):
        self.methods = set(methods)
        self.baseline = baseline
        self.against_rows = current_rows(settings.against)[1] if settings.against else None
        if self.against_rows is None and baseline not in self.methods:
            raise HyporagError(f"--until-decided compares every method with the baseline ({baseline}), which this "
                               f"run does not have ({', '.join(methods)}); add it to --methods, set --baseline, or "
                               "give --against an earlier run")

    def decisions(self, settings: dict[str, Any], rows: list[dict]) -> dict[str, Any]:
        return decisions_of(settings, rows, self.against_rows)

    def live(self, decisions: dict[str, Any]) -> dict[str, dict]:
        """The comparisons this invocation answers both sides of."""
        return {name: c for name, c in (decisions.get("comparisons") or {}).items() if name in self.methods}

    def __call__(self, settings: dict[str, Any], rows: list[dict]) -> bool:
        live = self.live(self.decisions(settings, rows))
        return bool(live) and all(c["outcome"] != "undecided" for c in live.values())

    def record(self, settings: dict[str, Any], rows: list[dict]) -> dict[str, Any]:
        """run.json's changes once the run stops: the questions every method of this invocation answered (the
        run's n from now on, so its report is of a finished run), why it stopped, and each comparison's outcome at
        the stop."""
        decisions = self.decisions(settings, rows)
        live = self.live(decisions)
        decided = bool(live) and all(c["outcome"] != "undecided" for c in live.values())
        finished: dict[str, set[str]] = {}
        for row in rows:
            finished.setdefault(row["question_id"], set()).add(row["method"])
        fingerprints = settings.get("question_fingerprints") or {}
        asked = [q for q in fingerprints if finished.get(q, set()) >= self.methods]
        undecided_elsewhere = [n for n, c in (decisions.get("comparisons") or {}).items()
                               if n not in live and c["outcome"] == "undecided"]
        reason = ("every comparison decided" if decided and not undecided_elsewhere else
                  "every comparison this run answers decided; undecided, of methods it did not run: "
                  + ", ".join(undecided_elsewhere) if decided else
                  "the question list or --max-questions ended first")
        at_stop = {n: {"outcome": c["outcome"], "decided_at": c["decided_at"], "by": c["by"]}
                   for n, c in (decisions.get("comparisons") or {}).items()}
        rule = {**(settings.get("sequential") or {}), "stopped_at": len(asked), "reason": reason, "at_stop": at_stop}
        return {"n": len(asked), "question_fingerprints": {q: fingerprints[q] for q in asked}, "sequential": rule}


__all__ = ["StopRule", "compare", "order_of", "sequential_record"]
