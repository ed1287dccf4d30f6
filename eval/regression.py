"""Two runs compared question by question: a regression gate for CI. Rows are paired by what they answered (the
question's fingerprint: text, options and gold), never by position or file line, so two runs of one dataset pair
even when their question lists differ; each method that both runs hold is compared with itself, on accuracy and on
the lead measure (margin beside), as confidence sequences (eval.comparisons: valid at any n, alpha split over the
comparisons) with the fixed-n tests beside them.

A method fails the gate only when the new run is worse than the old by more than `fail_if_worse` with the error
guarantee: the sequence's upper bound for (new − old) accuracy lies below −D (or, with `fail_if_worse_lead`, the
lead measure's below −L).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from hyporag.eval.comparisons import ALPHA, compare_sequences
from hyporag.eval.decision import LEAD, MEASURES, paired_continuous
from hyporag.eval.mcnemar import paired_comparison
from hyporag.eval.row import ResultRow
from hyporag.eval.run_report import current_rows
from hyporag.foundation.atomic import write_text_atomic
from hyporag.foundation.errors import HyporagError


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
                 deltas: dict[str, float] | None = None) -> dict[str, Any]:
    """Each method both hold: its new rows against its old ones, paired by question, in `order` (fingerprints)."""
    new, old = by_fingerprint(new_rows), by_fingerprint(old_rows)
    shared = [m for m in new if m in old]
    result = compare_sequences({m: (new[m], old[m]) for m in shared}, order, alpha, deltas)
    for method in shared:
        both = [q for q in order if q in new[method] and q in old[method]]
        fixed = paired_comparison({q: bool(new[method][q].correct) for q in both},
                                  {q: bool(old[method][q].correct) for q in both})
        values = [(a, b) for q in both if (a := _lead(new[method][q])) is not None and (b := _lead(
            old[method][q])) is not None]
        result["comparisons"][method]["fixed_n"] = {
            "accuracy": fixed, LEAD: paired_continuous([a - b for a, b in values]),
            "new_accuracy": sum(new[method][q].correct for q in both) / len(both) if both else None,
            "old_accuracy": sum(old[method][q].correct for q in both) / len(both) if both else None}
    result["only_new"] = [m for m in new if m not in old]
    result["only_old"] = [m for m in old if m not in new]
    return result


def _lead(row: ResultRow) -> float | None:
    return MEASURES[LEAD][0](row)


def compare_runs(new_dir: str | Path, old_dir: str | Path, alpha: float = ALPHA,
                 deltas: dict[str, float] | None = None) -> dict[str, Any]:
    """Two run directories compared method by method; a run with no method in common is refused in one line."""
    new_settings, new_rows, _, _ = current_rows(new_dir)
    _, old_rows, _, _ = current_rows(old_dir)
    result = compare_rows(new_rows, old_rows, order_of(new_settings, new_rows), alpha, deltas)
    if not result["comparisons"]:
        raise HyporagError(f"{new_dir} and {old_dir} share no method answered on the same questions; nothing to "
                           "compare")
    result.update(new=str(new_dir), old=str(old_dir))
    return result


def gate(result: dict[str, Any], fail_if_worse: float | None = 0.0, fail_if_worse_lead: float | None = None
         ) -> list[str]:
    """One failure per method the new run is worse in, beyond the margin, with the error guarantee."""
    failures = []
    for method, c in result["comparisons"].items():
        for measure, margin in (("accuracy", fail_if_worse), (LEAD, fail_if_worse_lead)):
            entry = c["measures"][measure]
            if margin is not None and entry.get("final_upper") is not None and entry["final_upper"] < -margin:
                failures.append(f"{method}: {measure} worse than the old run by more than {margin:g} "
                                f"(new − old {entry['final_mean']:+.3f}, sequence {entry['final_lower']:+.3f} to "
                                f"{entry['final_upper']:+.3f} on {entry['n']} paired questions)")
    return failures


def markdown_lines(result: dict[str, Any]) -> list[str]:
    lines = [f"Against {result.get('old')}: each method against itself there, paired by question (new − old; "
             f"sequences at alpha {result['alpha']:g}, {result['split']}).", "",
             "| method | paired | new / old accuracy | outcome | decided at | Δ accuracy (sequence) | "
             "Δ log p(gold) (sequence) | McNemar p (fixed n) |", "|---|---:|---:|---|---:|---:|---:|---:|"]
    for method, c in result["comparisons"].items():
        acc, lead, fixed = c["measures"]["accuracy"], c["measures"][LEAD], c.get("fixed_n") or {}

        def seq(e: dict) -> str:
            return ("–" if e.get("final_lower") is None else
                    f"{e['final_mean']:+.3f} ({e['final_lower']:+.2f} to {e['final_upper']:+.2f})")

        accuracies = ("–" if fixed.get("new_accuracy") is None else
                      f"{fixed['new_accuracy']:.3f} / {fixed['old_accuracy']:.3f}")
        lines.append(f"| {method} | {acc['n']} | {accuracies} | {c['outcome']} | {c.get('decided_at') or '–'} | "
                     f"{seq(acc)} | {seq(lead)} | {(fixed.get('accuracy') or {}).get('p_value', float('nan')):.3f} |")
    return lines


def write_gate_junit(path: str | Path, result: dict[str, Any], failures: list[str], suite: str) -> None:
    """A JUnit case per method compared, carrying its interval; failed when the gate failed it."""
    failed = {f.split(": ", 1)[0]: f for f in failures}
    cases = []
    for method, c in result["comparisons"].items():
        acc = c["measures"]["accuracy"]
        body = f"<failure message={quoteattr(failed[method])}/>" if method in failed else ""
        interval = ("none" if acc.get("final_lower") is None else
                    f"[{acc['final_lower']:.4f},{acc['final_upper']:.4f}]")
        cases.append(f'  <testcase classname={quoteattr(suite)} name={quoteattr(method + " vs " + result["old"])}>'
                     f"<system-out>outcome={c['outcome']} paired={acc['n']} delta_accuracy={acc.get('final_mean')} "
                     f"sequence={interval}</system-out>{body}</testcase>")
    xml = (f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name={quoteattr(suite)} tests="{len(cases)}" '
           f'failures="{len(failed)}">\n' + "\n".join(cases) + "\n</testsuite>\n")
    write_text_atomic(path, xml)
