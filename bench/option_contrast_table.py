"""docs/results/option-contrast.md's table: option-contrast against rag and chr, read from
bench/option_contrast_comparison.sh's results, on the questions all three methods finished in each dataset.
    .venv/bin/python bench/option_contrast_table.py runs/option-contrast
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from hyporag.eval import evidence_rates, paired_comparison, read_results, summarize

METHODS = ("rag", "chr", "option-contrast")
DATASETS = (("mmlu-med-b4", "MMLU-Med dev+val"), ("medqa-b4", "MedQA-US dev"))


def finished(rows: list[dict]) -> list[dict]:
    """Rows of the questions every method answered without an error: the paired tests need the same questions."""
    done = defaultdict(set)
    for r in rows:
        if not r.get("error"):
            done[r["question_id"]].add(r["method"])
    ids = {q for q, methods in done.items() if methods >= set(METHODS)}
    return [r for r in rows if r["question_id"] in ids and r["method"] in METHODS]


def median_seconds(rows: list[dict], method: str) -> float:
    """Wall seconds per question, the median: a shared machine's stalls (or a paused job) land in single rows."""
    return statistics.median(r["seconds"] for r in rows if r["method"] == method)


def versus_rag(correct: dict[str, dict[str, bool]], method: str) -> str:
    if method == "rag":
        return "–"
    p = paired_comparison(correct[method], correct["rag"])
    return f"{p['difference']:+.3f}, {p['a_only']} / {p['b_only']}, p = {p['p_value']:.2f}"


def table(rows: list[dict]) -> list[str]:
    by_method = {s.method: s.to_dict() for s in summarize(rows)}
    evidence = evidence_rates(rows)
    correct = {m: {r["question_id"]: bool(r["correct"]) for r in rows if r["method"] == m} for m in METHODS}
    header = ["| method | n | accuracy (95% CI) | vs rag: difference, only-this right / only-rag right, McNemar p | "
              "gold text in context | distractor text in context | calls/q | s/q (median) |",
              "|---|---:|---|---|---:|---:|---:|---:|"]
    return header + [
        f"| {m} | {by_method[m]['n']} | {by_method[m]['accuracy']:.3f} ({by_method[m]['ci95_low']:.2f}–"
        f"{by_method[m]['ci95_high']:.2f}) | {versus_rag(correct, m)} | "
        f"{evidence.get(m, {}).get('gold_in_context', 0):.2f} | "
        f"{evidence.get(m, {}).get('distractor_in_context', 0):.2f} | {by_method[m]['calls_per_q']:.2f} | "
        f"{median_seconds(rows, m):.1f} |" for m in METHODS]


def main(argv: list[str] | None = None) -> int:
    command = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    command.add_argument("root", type=Path, help="the OUT_ROOT given to bench/option_contrast_comparison.sh")
    out_root = command.parse_args(argv).root
    for directory, label in DATASETS:
        path = out_root / directory
        rows = finished(read_results(path)) if (path / "results.jsonl").is_file() else []
        count = len({r["question_id"] for r in rows})
        print(f"### {label}: {count} questions finished by all three methods\n")
        print("\n".join(table(rows)) + "\n" if rows else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
