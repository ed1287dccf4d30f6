"""docs/results/margin.md's tables from one evaluation's rows: the reader's option probabilities per method, each
method against rag (McNemar on accuracy beside paired tests on every continuous measure, with the questions 80%
power would need), context lift over cot, and a reliability table (+ PNG) of the reader's top probability.

Only questions every method finished are used, so every comparison is paired.
    .venv/bin/python bench/margin_table.py runs/margin-mmlu [--png docs/margin-reliability.png]
        [--against runs/other --labels paper,fast]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
from scipy.stats import mannwhitneyu

from hyporag.eval import ResultRow, cell, context_lift, current_rows, method_means, paired_measures, report_measures


def complete_rows(run: Path) -> tuple[list[dict], list[str]]:
    settings, rows, methods, _ = current_rows(run)
    done: dict[str, set[str]] = {}
    for row in rows:
        done.setdefault(row["question_id"], set()).add(row["method"])
    keep = {q for q, finished in done.items() if finished >= set(methods)}
    return [r for r in rows if r["question_id"] in keep], methods


def top_probability(row: ResultRow) -> float:
    """The reader's probability for the option it ranked first (rows with a complete distribution)."""
    return math.exp(max(row.option_logprobs.values()))


def reliability(rows: list[dict], bins: tuple[float, ...] = (0.0, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0001)) -> list[dict]:
    """Rows with probabilities binned by the reader's top probability: mean top probability against accuracy."""
    typed = [r for r in map(ResultRow.of, rows) if r.option_logprob_status == "ok" and not r.error]
    out = []
    for low, high in zip(bins, bins[1:], strict=False):
        inside = [r for r in typed if low <= top_probability(r) < high]
        if inside:
            out.append({"bin": f"{low:.1f}–{min(high, 1):.1f}", "n": len(inside),
                        "p_max": float(np.mean([top_probability(r) for r in inside])),
                        "accuracy": float(np.mean([r.correct for r in inside]))})
    return out


def tables(rows: list[dict], methods: list[str], seed: int = 0) -> str:
    n = len({r["question_id"] for r in rows})
    means = method_means(rows)
    lines = [f"{n} questions, every method answered each; rows with a complete option distribution per method.", "",
             "| method | accuracy | with probabilities | log p_gold (clipped −5) | log p_gold | p_gold | margin | "
             "Brier | gold rank |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for m in methods:
        mine = [r for r in rows if r["method"] == m]
        e = means.get(m, {})
        lines.append(f"| {m} | {np.mean([r['correct'] for r in mine]):.3f} | {e.get('with_probabilities', 0)} | "
                     + " | ".join(cell(e.get(k)) for k in ("log_p_gold_clipped", "log_p_gold", "p_gold", "margin",
                                                           "brier", "gold_rank")) + " |")
    paired = paired_measures(rows, "rag", seed)
    lines += ["", "Against rag, on the same questions (difference method − rag; for Brier and gold rank lower is "
              "better): mean with a paired bootstrap 95% interval, the test's p (McNemar exact for accuracy, "
              "Wilcoxon signed-rank otherwise), and the questions a test at 80% power would need for the observed "
              "effect and spread.", "",
              "| method | measure | n | difference (95% CI) | p | questions for 80% power |",
              "|---|---|---:|---:|---:|---:|"]
    for m, entry in paired.items():
        acc = entry["accuracy"]
        lines.append(f"| {m} | accuracy | {acc['n']} | {cell(acc['mean'], '{:+.3f}')} | {cell(acc['mcnemar_p'])} | "
                     f"{cell(acc['n_for_power'], '{:d}')} |")
        for name in report_measures():
            s = entry[name]
            interval = (f"{s['mean']:+.3f} ({s['ci95_low']:+.3f}–{s['ci95_high']:+.3f})" if s["mean"] is not None
                        else "–")
            lines.append(f"| {m} | {name} | {s['n']} | {interval} | {cell(s['wilcoxon_p'])} | "
                         f"{cell(s['n_for_power'], '{:d}')} |")
    lift = context_lift(rows, "cot")
    lines += ["", "Context lift: log p_gold (clipped) with the method's passages − without retrieval (cot), per "
              "question.", "", "| method | n | mean lift | share lifted (> 0) |", "|---|---:|---:|---:|"]
    for m, entry in lift.items():
        lines.append(f"| {m} | {entry['n']} | {entry['mean']:+.3f} | {entry['positive']:.2f} |")
    lines += evidence_lines(rows, lift)
    lines += ["", "Reliability of the reader (all methods' rows): its top option probability against how often that "
              "option was right.", "", "| top probability | rows | mean top probability | accuracy |",
              "|---|---:|---:|---:|"]
    for b in reliability(rows):
        lines.append(f"| {b['bin']} | {b['n']} | {b['p_max']:.3f} | {b['accuracy']:.3f} |")
    return "\n".join(lines) + "\n"


def evidence_lines(rows: list[dict], lift: dict[str, dict]) -> list[str]:
    """Lift split by a judge-free check of the context: is the gold option's text in it (and is a distractor's)?
    If lift reads the passages' use to the reader, it should be higher where the answer is written in them."""
    found = {(r["question_id"], r["method"]): r for r in rows}
    pooled: dict[str, list[float]] = {}
    lines = ["", "Lift by what the context holds (the option's text, normalised, found in the passages).", "",
             "| method | context holds | n | mean lift | share lifted (> 0) |", "|---|---|---:|---:|---:|"]
    for m, entry in lift.items():
        groups: dict[str, list[float]] = {}
        for q, value in entry["per_question"].items():
            row = found[(q, m)]
            kind = ("the gold option's text" if row.get("gold_in_context") else
                    "a distractor's text only" if row.get("distractor_in_context") else "no option's text")
            groups.setdefault(kind, []).append(value)
        for kind in ("the gold option's text", "a distractor's text only", "no option's text"):
            values = groups.get(kind, [])
            pooled.setdefault(kind, []).extend(values)
            if values:
                lines.append(f"| {m} | {kind} | {len(values)} | {np.mean(values):+.3f} | "
                             f"{np.mean([v > 0 for v in values]):.2f} |")
    with_gold, without = pooled.get("the gold option's text", []), pooled.get("no option's text", [])
    if len(with_gold) >= 2 and len(without) >= 2:
        test = mannwhitneyu(with_gold, without, alternative="two-sided")
        lines += ["", f"Pooled over methods: mean lift {np.mean(with_gold):+.3f} where the gold option's text is in "
                  f"the context (n {len(with_gold)}) against {np.mean(without):+.3f} where no option's is "
                  f"(n {len(without)}); Mann-Whitney U p {test.pvalue:.3f}."]
    return lines


def against_lines(rows: list[dict], other: list[dict], label: str, other_label: str, seed: int = 0) -> list[str]:
    """Each method of this run against the same method of another run (another protocol, model or budget) on the
    questions both answered: does the change move accuracy, the reader's belief, or how sure it is?"""
    lines = ["", f"Each method, {label} against {other_label}, on the questions both runs answered (difference "
             f"{label} − {other_label}; paired bootstrap 95% interval; McNemar exact p for accuracy, Wilcoxon "
             "otherwise).", "",
             f"| method | n | complete distributions ({label} / {other_label}) | mean top probability | accuracy | "
             "log p_gold (clipped) | margin |", "|---|---:|---:|---:|---:|---:|---:|"]
    for m in sorted({r["method"] for r in rows} & {r["method"] for r in other}):
        shared = {r["question_id"] for r in rows if r["method"] == m} & {r["question_id"] for r in other
                                                                         if r["method"] == m}
        if not shared:
            continue
        mine = [{**r, "method": label} for r in rows if r["method"] == m and r["question_id"] in shared]
        theirs = [{**r, "method": other_label} for r in other if r["method"] == m and r["question_id"] in shared]
        entry = paired_measures(mine + theirs, other_label, seed).get(label)
        complete = [[t for t in map(ResultRow.of, side) if t.option_logprob_status == "ok"] for side in (mine, theirs)]
        p_max = [np.mean([top_probability(t) for t in side] or [np.nan]) for side in complete]
        acc = entry["accuracy"]
        lines.append(f"| {m} | {len(shared)} | {len(complete[0])} / {len(complete[1])} | "
                     f"{p_max[0]:.3f} / {p_max[1]:.3f} | "
                     f"{acc['mean']:+.3f}, p {cell(acc['mcnemar_p'])} | {interval(entry['log_p_gold_clipped'])} | "
                     f"{interval(entry['margin'])} |")
    return lines


def interval(s: dict) -> str:
    return (f"{s['mean']:+.3f} ({s['ci95_low']:+.3f}–{s['ci95_high']:+.3f}), p {cell(s['wilcoxon_p'])}"
            if s["mean"] is not None else "–")


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bins = reliability(rows, tuple(np.linspace(0.25, 1.0001, 9)))
    fig, ax = plt.subplots(figsize=(4, 4))
    ax.plot([0, 1], [0, 1], color="#999", lw=1, ls="--")
    ax.plot([b["p_max"] for b in bins], [b["accuracy"] for b in bins], marker="o")
    for b in bins:
        ax.annotate(str(b["n"]), (b["p_max"], b["accuracy"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set(xlabel="reader's top option probability", ylabel="accuracy", xlim=(0.2, 1), ylim=(0, 1),
           title="reliability of the embedded 1.5B")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("run")
    parser.add_argument("--png")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--against", metavar="RUN", help="another run of the same methods (e.g. the other protocol): "
                        "each method compared with itself there, on the questions both answered")
    parser.add_argument("--labels", default="this run,other run", help="names of the two runs in that table")
    args = parser.parse_args()
    rows, methods = complete_rows(Path(args.run))
    print(tables(rows, methods, args.seed))
    if args.against:
        label, other_label = args.labels.split(",", 1)
        print("\n".join(against_lines(rows, current_rows(Path(args.against))[1], label, other_label, args.seed)))
    if args.png:
        plot(rows, Path(args.png))


if __name__ == "__main__":
    main()
