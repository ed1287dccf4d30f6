"""Metrics over per-question result rows: accuracy with a 95% Wilson interval, parse failures, cost per question."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable

from hyporag.eval.row import ResultRow


def wilson_interval(correct: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95% Wilson score interval: well-behaved at small n and near 0 or 1, unlike the normal approximation."""
    if n == 0:
        return (0.0, 0.0)
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def summarize(rows: Iterable[dict]) -> list[dict]:
    """One summary per method, in first-seen order."""
    by_method: dict[str, list[ResultRow]] = defaultdict(list)
    for row in map(ResultRow.of, rows):
        by_method[row.method].append(row)
    summary = []
    for method, items in by_method.items():
        n = len(items)
        correct = sum(1 for r in items if r.correct)
        low, high = wilson_interval(correct, n)
        summary.append({
            "method": method,
            "n": n,
            "accuracy": correct / n if n else 0.0,
            "ci95_low": low,
            "ci95_high": high,
            "parse_failures": sum(1 for r in items if r.parse_failure),
            "errors": sum(1 for r in items if r.error),
            "fallbacks": fallback_counts(items),
            "calls_per_q": sum(r.calls for r in items) / n if n else 0.0,
            "input_tokens_per_q": sum(r.input_tokens for r in items) / n if n else 0.0,
            "output_tokens_per_q": sum(r.output_tokens for r in items) / n if n else 0.0,
            "processed_tokens_per_q": _mean_known([r.processed_tokens for r in items]),
            "seconds_per_q": sum(r.seconds for r in items) / n if n else 0.0,
        })
    return summary


def fallback_counts(rows: Iterable[ResultRow]) -> dict[str, int]:
    """Rows that took each kind of fallback (a program names its kinds: HCQR's query, CHR's contrast, ...)."""
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        for kind, value in row.fallbacks.items():
            counts[kind] += bool(value)
    return dict(sorted(counts.items()))


def fallback_cell(counts: dict[str, int] | None) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in (counts or {}).items() if n) or "0"


def _mean_known(values: list[int | None]) -> float | None:
    """The mean, or None when any value is unknown (a backend that does not report its prompt cache)."""
    return None if not values or any(v is None for v in values) else sum(values) / len(values)


def format_table(summary: list[dict]) -> str:
    """A Markdown table of the summary (what `hyporag eval` prints and writes to summary.md)."""
    head = ("| method | n | accuracy | 95% CI | parse fail | errors | fallbacks | calls/q | "
            "in tok/q sent | processed | out tok/q | s/q |")
    lines = [head, "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in summary:
        lines.append(
            f"| {s['method']} | {s['n']} | {s['accuracy']:.3f} | {s['ci95_low']:.3f}–{s['ci95_high']:.3f} | "
            f"{s['parse_failures']} | {s['errors']} | {fallback_cell(s.get('fallbacks'))} | "
            f"{s['calls_per_q']:.2f} | {s['input_tokens_per_q']:.0f} | "
            f"{'–' if s.get('processed_tokens_per_q') is None else format(s['processed_tokens_per_q'], '.0f')} | "
            f"{s['output_tokens_per_q']:.0f} | {s['seconds_per_q']:.1f} |"
        )
    return "\n".join(lines)
