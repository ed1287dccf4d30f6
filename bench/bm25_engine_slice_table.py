"""The paired accuracy table of bench/bm25_engine_slice.sh: per method, each engine's accuracy on the questions both
answered, the discordant pairs with McNemar's exact p, how much of the retrieved context the engines share, and how
often the answer (and CHR's hypothesis) came out the same — what an engine switch has to pass before it is adopted.

    .venv/bin/python bench/bm25_engine_slice_table.py runs/bm25-engine-slice
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hyporag.eval import paired_comparison, read_results

ENGINES = ("bm25s", "tantivy")


def by_question(rows: list[dict], method: str) -> dict[str, dict]:
    return {r["question_id"]: r for r in rows if r["method"] == method}


def table(root: Path) -> str:
    """Markdown rows per method over the questions both engines' runs hold."""
    runs = {engine: read_results(root / engine / "results.jsonl") for engine in ENGINES}
    methods = sorted({r["method"] for rows in runs.values() for r in rows})
    lines = ["| method | n | errors | accuracy bm25s | accuracy tantivy | bm25s only / tantivy only | McNemar p | "
             "context overlap | same answer | same hypothesis |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for method in methods:
        a, b = by_question(runs["bm25s"], method), by_question(runs["tantivy"], method)
        shared = sorted(set(a) & set(b))
        if not shared:
            continue
        errors = sum(1 for q in shared for r in (a[q], b[q]) if r.get("error"))
        paired = paired_comparison({q: bool(a[q]["correct"]) for q in shared},
                                   {q: bool(b[q]["correct"]) for q in shared})
        overlap = sum(len(set(a[q]["passage_ids"]) & set(b[q]["passage_ids"])) / max(1, len(a[q]["passage_ids"]))
                      for q in shared) / len(shared)
        same_answer = sum(a[q]["answer"] == b[q]["answer"] for q in shared)
        hypotheses = [q for q in shared if a[q].get("hypothesis") is not None]
        same_hypothesis = (f"{sum(a[q]['hypothesis'] == b[q].get('hypothesis') for q in hypotheses)}/{len(hypotheses)}"
                           if hypotheses else "—")
        accuracy = [sum(bool(run[q]["correct"]) for q in shared) / len(shared) for run in (a, b)]
        lines.append(f"| {method} | {len(shared)} | {errors} | {accuracy[0]:.3f} | {accuracy[1]:.3f} | "
                     f"{paired['a_only']} / {paired['b_only']} | {paired['p_value']:.2f} | {overlap:.3f} | "
                     f"{same_answer}/{len(shared)} | {same_hypothesis} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, nargs="?", default=Path("runs/bm25-engine-slice"))
    args = parser.parse_args()
    missing = [str(args.root / e / "results.jsonl") for e in ENGINES if not (args.root / e / "results.jsonl").exists()]
    if missing:
        print(f"error: no results at {', '.join(missing)}: run bench/bm25_engine_slice.sh first", file=sys.stderr)
        return 2
    sys.stdout.write(table(args.root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
