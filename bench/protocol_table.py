"""docs/results/protocols.md's tables: the `paper` protocol against `fast`, read from
bench/protocol_comparison.sh's results.

Every comparison is on the questions all four settings (paper/fast × B=3/5) finished for every method, so the
paired tests are on the same questions. Cost is averaged over the calls that really ran: a call served from DSPy's
cache (the same prompt again, e.g. a hypothesis step that does not depend on B) counts no tokens and is left out.
    .venv/bin/python bench/protocol_table.py runs/protocols
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

from hyporag.eval import (
    COST_FIELDS,
    ResultRow,
    cell,
    evidence_rates,
    mechanism,
    paired_comparison,
    processed_of,
    read_results,
    summarize,
    wilson_interval,
)
from hyporag.programs import PAPER, PROTOCOLS

METHODS = ("cot", "rag", "rewrite", "hcqr", "chr")
SETTINGS = [(p, b) for b in (3, 5) for p in PROTOCOLS]


def load(root: Path, dataset: str) -> dict[tuple[str, int], list[dict]]:
    out = {}
    for protocol, budget in SETTINGS:
        path = root / f"{dataset}-{protocol}-b{budget}" / "results.jsonl"
        out[protocol, budget] = read_results(path) if path.is_file() else []
    return out


def complete_questions(runs: dict[tuple[str, int], list[dict]]) -> set[str]:
    done = None
    for rows in runs.values():
        finished = defaultdict(set)
        for r in rows:
            if not r.get("error"):
                finished[r["question_id"]].add(r["method"])
        ids = {q for q, ms in finished.items() if ms >= set(METHODS)}
        done = ids if done is None else done & ids
    return done or set()


def fresh_cost(rows: list[dict]) -> dict[str, float | None]:
    """Calls, tokens and seconds per question, each role averaged over the rows where it really called its LM."""
    per_role: dict[str, list[dict]] = defaultdict(list)
    for r in map(ResultRow.of, rows):
        for role, cost in (r.cost_by_role or {}).items():
            if cost.get("calls"):
                per_role[role].append(cost)
    total = dict.fromkeys(COST_FIELDS, 0.0)
    processed: float | None = 0.0  # unknown (None) once any call did not report its cache, never 0
    for costs in per_role.values():
        for field in COST_FIELDS:
            total[field] += sum(c.get(field, 0) or 0 for c in costs) / len(costs)
        known = [processed_of(c) for c in costs]
        processed = None if processed is None or None in known else processed + sum(known) / len(known)
    return {**total, "processed_tokens": processed}


def accuracy_table(runs: dict, ids: set[str]) -> list[str]:
    lines = ["| method | B | fast accuracy (95% CI) | paper accuracy (95% CI) | paper − fast | McNemar p | "
             "gold in ctx fast / paper | parse failures fast / paper |", "|---|---:|---|---|---:|---:|---|---|"]
    for method in METHODS:
        for budget in (3, 5):
            if method == "cot" and budget == 5:
                continue  # no retrieval: B changes nothing
            picked = {p: [r for r in runs[p, budget] if r["method"] == method and r["question_id"] in ids]
                      for p in PROTOCOLS}
            summary = {p: summarize(rows)[0].to_dict() for p, rows in picked.items()}
            paired = paired_comparison({r["question_id"]: bool(r["correct"]) for r in picked[PAPER.name]},
                                       {r["question_id"]: bool(r["correct"]) for r in picked["fast"]})
            gold = {p: evidence_rates(rows).get(method, {}).get("gold_in_context") for p, rows in
                    picked.items()}
            cells = [f"{s['accuracy']:.3f} ({s['ci95_low']:.2f}–{s['ci95_high']:.2f})" for s in summary.values()]
            golds = " / ".join("–" if g is None else f"{g:.2f}" for g in gold.values())
            fails = " / ".join(str(s["parse_failures"]) for s in summary.values())
            lines.append(f"| {method} | {'–' if method == 'cot' else budget} | {cells[0]} | {cells[1]} | "
                         f"{paired['difference']:+.3f} | {paired['p_value']:.3f} | {golds} | {fails} |")
    return lines


def cost_table(runs: dict, ids: set[str]) -> list[str]:
    lines = ["| method | B | protocol | calls/q | input tok/q sent | processed | output tok/q | s/q |",
             "|---|---:|---|---:|---:|---:|---:|---:|"]
    for method in METHODS:
        for protocol, budget in SETTINGS:
            if method == "cot" and budget == 5:
                continue
            rows = [r for r in runs[protocol, budget] if r["method"] == method and r["question_id"] in ids]
            c = fresh_cost(rows)
            if not c["calls"]:  # all prompts were B = 3's: B // 3 = 1 passage a query at B = 3 and 5
                lines.append(f"| {method} | {budget} | {protocol} | 0 (B = 3's prompts, from cache) | – | – | – | – |")
                continue
            lines.append(f"| {method} | {'–' if method == 'cot' else budget} | {protocol} | {c['calls']:.2f} | "
                         f"{c['input_tokens']:.0f} | {cell(c['processed_tokens'], '{:.0f}')} | "
                         f"{c['output_tokens']:.0f} | {c['seconds']:.1f} |")
    return lines


def mechanism_table(runs: dict, ids: set[str]) -> list[str]:
    lines = ["| method | B | protocol | hypotheses naming an option | names the gold option | answer follows it | "
             "wrong hypotheses overturned to gold |", "|---|---:|---|---:|---:|---:|---|"]
    for method in ("hcqr", "chr"):
        for protocol, budget in SETTINGS:
            rows = [r for r in runs[protocol, budget] if r["method"] == method and r["question_id"] in ids]
            m = mechanism(rows).get(method)
            if m:
                low, high = wilson_interval(round(m["hypothesis_gold"] * m["n"]), m["n"])
                lines.append(f"| {method} | {budget} | {protocol} | {m['n']} | {m['hypothesis_gold']:.2f} "
                             f"({low:.2f}–{high:.2f}) | {m['answer_follows']:.2f} | "
                             f"{cell(m['overturned_to_gold'], '{:.2f}')} of {m['wrong_hypotheses']} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    args = parser.parse_args(argv)
    for dataset, label in (("mmlu-med", "MMLU-Med dev+val"), ("medqa", "MedQA-US dev")):
        runs = load(args.root, dataset)
        ids = complete_questions(runs)
        print(f"### {label}: {len(ids)} questions finished in all four settings\n")
        if not ids:
            continue
        for title, lines in (("Accuracy", accuracy_table(runs, ids)), ("Cost per question", cost_table(runs, ids)),
                             ("Does the answer overturn a wrong hypothesis?", mechanism_table(runs, ids))):
            print(f"#### {title}\n\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
