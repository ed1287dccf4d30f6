"""Two runs compared question by question: a regression gate for CI. Rows are paired by what they answered (the
question's fingerprint: text, options and gold), never by position or file line, so two runs of one dataset pair
even when their question lists differ; each method that both runs hold is compared with itself on the run's
deciding measure (hyporag.eval.comparisons: the betting test and its sequence, alpha split over the methods), with
the fixed-n tests beside.

A gate needs questions to pair: a method paired on fewer than `min_paired` questions fails it (two runs of different
datasets share none, and "undecided" on nothing must never pass). A method fails the gate when the new run is worse
than the old with the error guarantee: the test says "worse" (`fail_if_worse` 0), or the sequence's upper bound on
(new − old) lies below −D (`fail_if_worse` D > 0, in the deciding measure's units).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hyporag.eval.comparisons import ALPHA, compare_sequences
from hyporag.eval.decision import paired_continuous
from hyporag.eval.mcnemar import paired_comparison
from hyporag.eval.measures import measure_named
from hyporag.eval.row import ResultRow
from hyporag.eval.run_rows import current_rows
from hyporag.foundation.errors import HyporagError

MIN_PAIRED = 10  # questions a gated method must pair on, at the least, for its outcome to mean anything


def by_fingerprint(rows: list[dict]) -> dict[str, dict[str, ResultRow]]:
    """Rows by method, then by the fingerprint of the question they answered (errored rows left out)."""
    out: dict[str, dict[str, ResultRow]] = {}
    for row in map(ResultRow.of, rows):
        if not row.error and row.question_fingerprint:
            out.setdefault(row.method, {})[row.question_fingerprint] = row
    return out


def order_of(settings: dict, rows: list[dict]) -> list[str]:
    """The new run's question order, as fingerprints."""
    fingerprints = settings.get("question_fingerprints") or {}
    order = list(fingerprints.values()) if fingerprints else []
    return order + sorted({r["question_fingerprint"] for r in rows if r.get("question_fingerprint")} - set(order))


def compare_rows(new_rows: list[dict], old_rows: list[dict], order: list[str], alpha: float = ALPHA,
                 deltas: dict[str, float] | None = None, decide_on: str | None = None,
                 methods: list[str] | None = None) -> dict[str, Any]:
    """Each method both hold (of `methods`, when given: alpha is split over them all): its new rows against its old
    ones, paired by question, in `order` (fingerprints)."""
    new, old = by_fingerprint(new_rows), by_fingerprint(old_rows)
    shared = [m for m in (methods or new) if m in old]
    result = compare_sequences({m: (new.get(m, {}), old[m]) for m in shared}, order, alpha, deltas,
                               decide_on=decide_on, family=len(methods) if methods else None)
    for method in shared:
        mine = new.get(method, {})
        both = [q for q in order if q in mine and q in old[method]]
        measure = measure_named(result["comparisons"][method]["by"])
        values = [d for q in both if (d := measure.difference(mine[q], old[method][q])) is not None]
        result["comparisons"][method]["fixed_n"] = {
            "accuracy": paired_comparison({q: bool(mine[q].correct) for q in both},
                                          {q: bool(old[method][q].correct) for q in both}),
            "deciding": {"measure": measure.name, **paired_continuous(values)},
            "new_accuracy": sum(mine[q].correct for q in both) / len(both) if both else None,
            "old_accuracy": sum(old[method][q].correct for q in both) / len(both) if both else None}
    result["only_new"] = [m for m in new if m not in old]
    result["only_old"] = [m for m in old if m not in new]
    return result


def compare_runs(new_dir: str | Path, old_dir: str | Path, alpha: float = ALPHA,
                 deltas: dict[str, float] | None = None, decide_on: str | None = None,
                 min_paired: int = MIN_PAIRED) -> dict[str, Any]:
    """Two run directories compared method by method; refused in one line when no method both hold pairs on at
    least `min_paired` questions (runs of different datasets, or a baseline of another domain)."""
    new_settings, new_rows, _, _ = current_rows(new_dir)
    _, old_rows, _, _ = current_rows(old_dir)
    result = compare_rows(new_rows, old_rows, order_of(new_settings, new_rows), alpha, deltas, decide_on)
    if not result["comparisons"]:
        raise HyporagError(f"{new_dir} and {old_dir} share no method; nothing to compare")
    most = max(c["paired"] for c in result["comparisons"].values())
    if most < min_paired:
        raise HyporagError(f"{new_dir} and {old_dir} pair on {most} question(s) at most (a comparison needs "
                           f"{min_paired}): are they runs of the same questions?")
    result.update(new=str(new_dir), old=str(old_dir), min_paired=min_paired)
    return result


def gate(result: dict[str, Any], fail_if_worse: float | None = 0.0, min_paired: int = MIN_PAIRED) -> list[str]:
    """One failure per method the new run is worse in, beyond the margin, with the error guarantee, and per method
    paired on too few questions to say."""
    failures = []
    for method, c in result["comparisons"].items():
        measure = measure_named(c["by"])
        if c["paired"] < min_paired:
            failures.append(f"{method}: paired on {c['paired']} question(s) with the old run, fewer than the "
                            f"{min_paired} a comparison needs (are the two runs of the same questions?)")
        elif fail_if_worse is not None and (c["outcome"] == "worse" if fail_if_worse == 0 else
                                            c["upper"] is not None and c["upper"] < -fail_if_worse):
            failures.append(f"{method}: {measure.label} worse than the old run by more than {fail_if_worse:g} "
                            f"(new − old {c['mean']:+.3f}, sequence {c['lower']:+.3f} to {c['upper']:+.3f} on "
                            f"{c['paired']} paired questions)")
    return failures


def markdown_lines(result: dict[str, Any]) -> list[str]:
    decided_on = {measure_named(c["by"]).label for c in result["comparisons"].values()} or {"–"}
    lines = [f"Against {result.get('old')}: each method against itself there, paired by question (new − old, on "
             f"{', '.join(sorted(decided_on))}; alpha {result['alpha']:g}, {result['split']}).", "",
             "| method | paired | new / old accuracy | outcome | decided at | Δ deciding measure (sequence) | "
             "McNemar p (fixed n) |", "|---|---:|---:|---|---:|---:|---:|"]
    for method, c in result["comparisons"].items():
        fixed = c.get("fixed_n") or {}
        band = "–" if c.get("lower") is None else f"{c['mean']:+.3f} ({c['lower']:+.2f} to {c['upper']:+.2f})"
        accuracies = ("–" if fixed.get("new_accuracy") is None else
                      f"{fixed['new_accuracy']:.3f} / {fixed['old_accuracy']:.3f}")
        lines.append(f"| {method} | {c['paired']} | {accuracies} | {c['outcome']} | {c.get('decided_at') or '–'} | "
                     f"{band} | {(fixed.get('accuracy') or {}).get('p_value', float('nan')):.3f} |")
    return lines
