"""docs/results/per-passage.md's tables from recorded runs (no LM calls): each method answering jointly against the
same method answering per passage (and rag answering on demand), on the same questions, paired; each against cot
(context lift); the lift on the questions whose joint context holds only a distractor's text; cost per question;
the passages' pulls.

    .venv/bin/python bench/per_passage_table.py --set mmlu-med=runs/margin-mmlu-b4,runs/pp-mmlu-b4,runs/od-mmlu-b4 \
        --set medqa-dev=runs/until-medqa-b4+runs/chr-medqa-b4,runs/pp-medqa-b4,runs/od-medqa-b4 \
        --out runs/per-passage-tables.md

Each --set names the joint run, the per-passage run and the on-demand run of one question set; a part may join
several runs with `+` (methods added later in their own directory), each method in one run of its part only, cot taken
from the first joint run. Only questions every compared row answered are used; runs whose reader, retriever, index,
budget or question texts differ are refused.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from hyporag.eval import (
    PULL_FLOOR,
    ResultRow,
    cell,
    context_lift,
    current_rows,
    differing_settings,
    paired_measures,
    summarize,
)

METHODS = ("rag", "hcqr", "chr")


# what must agree between the joint, per-passage and on-demand runs for their rows to be paired: the same reader,
# retriever, index and budget; the answer step (answer_mode, mix, retrieve_below) is what is compared
SHARED_SETTINGS = ("lm_identities", "budget", "retriever", "index_fingerprint", "bm25_search", "reasoning")
ANSWER_STEP = ("answer_mode", "mix", "mix_temperature", "prior_weight", "retrieve_below")


def labelled(run: Path, suffix: str, keep_cot: bool) -> tuple[dict, list[dict]]:
    """A run's settings and rows, each method renamed `method suffix` (cot keeps its name: the same closed-book
    reader, taken from the first joint run only, as its cached copies elsewhere would halve its cost)."""
    settings, rows, _, _ = current_rows(run)
    return settings, [{**r, "method": r["method"] if r["method"] == "cot" or not suffix else f"{r['method']} {suffix}"}
                      for r in rows if not r.get("error") and (keep_cot or r["method"] != "cot")]


def refuse_repeated_rows(rows_by_run: dict[Path, list[dict]]) -> None:
    """One method's answer to one question comes from one run: two runs of a part answering it both would count it
    twice."""
    seen: dict[tuple[str, str], Path] = {}
    for run, rows in rows_by_run.items():
        for row in rows:
            first = seen.setdefault((row["question_id"], row["method"]), run)
            if first != run:
                raise SystemExit(f"{run}: {row['method']} answers question {row['question_id']} as {first} does; "
                                 "name each method's run once in a part")


def check_same_setup(runs: dict[Path, dict], rows_by_run: dict[Path, list[dict]]) -> None:
    """Refuse to pair rows that answer different questions or ran under different settings: the runs must agree on
    SHARED_SETTINGS, on each shared method's program apart from its answer step, and on every shared question's
    fingerprint."""
    (first, base), *others = runs.items()
    for run, settings in others:
        for key in SHARED_SETTINGS:
            if settings.get(key) != base.get(key):
                raise SystemExit(f"{run}/run.json: {key} is {settings.get(key)!r}, {first} has {base.get(key)!r}; "
                                 "these runs cannot be paired")
        for method, program in (settings.get("program") or {}).items():
            other = (base.get("program") or {}).get(method)
            if other is not None and set(differing_settings(other, program)) - set(ANSWER_STEP):
                raise SystemExit(f"{run}/run.json: {method}'s program differs from {first}'s beyond the answer step")
    seen: dict[str, tuple[str, Path]] = {}
    for run, rows in rows_by_run.items():
        for row in rows:
            known = seen.setdefault(row["question_id"], (row.get("question_fingerprint"), run))
            if known[0] != row.get("question_fingerprint"):
                raise SystemExit(f"{run}: question {row['question_id']} has fingerprint "
                                 f"{row.get('question_fingerprint')}, {known[1]} has {known[0]}; not the same question")


def on_common_questions(rows: list[dict], names: list[str]) -> list[dict]:
    done: dict[str, set[str]] = {}
    for row in rows:
        done.setdefault(row["question_id"], set()).add(row["method"])
    keep = {q for q, got in done.items() if got >= set(names)}
    return [r for r in rows if r["question_id"] in keep and r["method"] in names]


def pair_line(name: str, entry: dict) -> str:
    acc, lead, margin = entry["accuracy"], entry["log_p_gold_clipped"], entry["margin"]

    def interval(s: dict) -> str:
        return "–" if s["mean"] is None else f"{s['mean']:+.3f} ({s['ci95_low']:+.3f} to {s['ci95_high']:+.3f})"

    return (f"| {name} | {acc['n']} | {cell(acc['mean'], '{:+.3f}')} | {cell(acc['mcnemar_p'])} | {interval(lead)} | "
            f"{cell(lead['wilcoxon_p'])} | {interval(margin)} | {cell(margin['wilcoxon_p'])} |")


def lift_of(rows: list[dict], seed: int) -> dict[str, dict]:
    """Per program: log p(gold) (clipped) − cot's on the same question, mean with a paired bootstrap 95% interval
    and the Wilcoxon p (paired_measures against cot), and the share of questions it raised (context_lift)."""
    paired, shares = paired_measures(rows, "cot", seed), context_lift(rows, "cot")
    return {m: {**entry["log_p_gold_clipped"], "positive": (shares.get(m) or {}).get("positive")}
            for m, entry in paired.items()}


def lift_cell(entry: dict | None) -> str:
    if not entry or entry.get("mean") is None:
        return "–"
    return f"{entry['mean']:+.3f} ({entry['ci95_low']:+.3f} to {entry['ci95_high']:+.3f})"


def lift_line(name: str, lift: dict) -> str:
    entry = lift.get(name)
    if not entry or entry.get("mean") is None:
        return f"| {name} | – | – | – | – |"
    return (f"| {name} | {entry['n']} | {lift_cell(entry)} | {cell(entry['wilcoxon_p'])} | "
            f"{cell(entry['positive'], '{:.2f}')} |")


def set_tables(label: str, parts: list[list[Path]], seed: int) -> list[str]:
    """One question set's tables; parts are the joint, per-passage and (optional) on-demand runs."""
    suffixes = ("", "per-passage", "on-demand")
    runs = {run: (suffix, i == 0 and j == 0) for i, (suffix, part) in enumerate(zip(suffixes, parts, strict=False))
            for j, run in enumerate(part)}
    read = {run: labelled(run, suffix, keep_cot) for run, (suffix, keep_cot) in runs.items()}
    rows_by_run = {run: rows for run, (_, rows) in read.items()}
    check_same_setup({run: settings for run, (settings, _) in read.items()}, rows_by_run)
    refuse_repeated_rows(rows_by_run)
    on_demand = len(parts) > 2
    rows = [row for _, run_rows in read.values() for row in run_rows]
    names = ["cot", *[m for m in METHODS], *[f"{m} per-passage" for m in METHODS],
             *(["rag on-demand"] if on_demand else [])]
    present = {r["method"] for r in rows}
    names = [n for n in names if n in present]
    rows = on_common_questions(rows, names)
    n = len({r["question_id"] for r in rows})
    lines = [f"### {label}: {n} questions every row below answered", "",
             "| program | accuracy | log p(gold) (clipped) | calls/q | prompt tokens processed/q | s/q | "
             "pulls → gold / other | retrieved |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for s in summarize(rows):
        mine = [ResultRow.of(r) for r in rows if r["method"] == s.method]
        lead = [max(r.log_p_gold, -5.0) for r in mine if r.log_p_gold is not None]
        pulls = "–" if s.pull_gold is None else f"{s.pull_gold:.2f} / {s.pull_distractor:.2f} ({s.pulled_passages})"
        lines.append(f"| {s.method} | {s.accuracy:.3f} | {cell(float(np.mean(lead)) if lead else None)} | "
                     f"{s.calls_per_q:.2f} | {cell(s.processed_tokens_per_q, '{:.0f}')} | {s.seconds_per_q:.1f} | "
                     f"{pulls} | {cell(s.retrieved_share, '{:.2f}')} |")
    lines += ["", "Per passage (and on demand) against the same method's joint answer, paired (difference − joint): "
              "accuracy with McNemar's exact p; log p(gold) clipped at −5 and margin with a paired bootstrap 95% "
              "interval and the Wilcoxon p.", "",
              "| program | n | Δ accuracy | McNemar p | Δ log p(gold) (95% CI) | Wilcoxon p | Δ margin (95% CI) | "
              "Wilcoxon p |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for method in METHODS:
        for variant in (f"{method} per-passage", f"{method} on-demand"):
            if variant in names and method in names:
                pair = paired_measures([r for r in rows if r["method"] in (method, variant)], method, seed)
                lines.append(pair_line(variant, pair[variant]))
    lift = lift_of(rows, seed)
    lines += ["", "Against cot (no retrieval): context lift, log p(gold) with the program's passages − without, per "
              "question, mean with a paired bootstrap 95% interval, the Wilcoxon p and the share of questions lifted.",
              "", "| program | n | lift over cot (95% CI) | Wilcoxon p | share > 0 |", "|---|---:|---:|---:|---:|"]
    lines += [lift_line(name, lift) for name in names if name != "cot"]
    lines += ["", "Where the joint context holds only a distractor's text (the method's own joint passages name a "
              "wrong option's text and not the gold option's): the lift over cot of the joint answer and of the "
              "per-passage answer, on the same questions.", "",
              "| method | questions | joint lift (95% CI) | per-passage lift (95% CI) |", "|---|---:|---:|---:|"]
    for method in METHODS:
        variant = f"{method} per-passage"
        if method not in names or variant not in names:
            continue
        only = {r["question_id"] for r in rows if r["method"] == method and r.get("distractor_in_context")
                and not r.get("gold_in_context")}
        subset = [r for r in rows if r["question_id"] in only and r["method"] in ("cot", method, variant)]
        lifted = lift_of(subset, seed) if len(only) > 1 else {}
        lines.append(f"| {method} | {len(only)} | {lift_cell(lifted.get(method))} | {lift_cell(lifted.get(variant))} |")
    return lines + gold_shift_lines(rows)


def gold_shift_lines(rows: list[dict]) -> list[str]:
    """Each passage read alone against the closed-book answer, by what it did to the gold option's log p (raised or
    lowered it by PULL_FLOOR or more), split by whether the closed-book answer was already right: the direction
    names one option of four, so it is read beside the shift of gold itself."""
    lines = ["", "Each passage read alone: did it raise or lower the gold option's log p by 0.05 or more against "
             "the closed-book answer, split by whether the closed-book answer was right.", "",
             "| program | closed book | passages | raised gold | lowered gold | mean shift of gold's log p |",
             "|---|---|---:|---:|---:|---:|"]
    for method in sorted({r["method"] for r in rows if r.get("passage_pulls")}):
        for right in (True, False):
            shifts = []
            for r in rows:
                book = ((r.get("closed_book") or {}).get("option_logprobs")) or {}
                if r["method"] != method or not book or (max(book, key=book.get) == r["gold"]) != right:
                    continue
                shifts += [p["gold_shift"] for p in r["passage_pulls"] if p and p.get("gold_shift") is not None]
            if shifts:
                raised, lowered = sum(s >= PULL_FLOOR for s in shifts), sum(s <= -PULL_FLOOR for s in shifts)
                lines.append(f"| {method} | {'right' if right else 'wrong'} | {len(shifts)} | "
                             f"{raised / len(shifts):.2f} | {lowered / len(shifts):.2f} | {np.mean(shifts):+.3f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", required=True,
                        metavar="LABEL=JOINT[+JOINT],PER_PASSAGE[+...][,ON_DEMAND]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    lines: list[str] = []
    for item in args.set:
        label, _, dirs = item.partition("=")
        names = [part.split("+") for part in dirs.split(",")]
        parts = [[Path(d) for d in part] for part in names]
        if not label or len(parts) not in (2, 3) or not all(all(part) for part in names):
            parser.error(f"--set {item!r}: expected LABEL=JOINT,PER_PASSAGE[,ON_DEMAND], each part one run or runs "
                         "joined by +")
        named = [d for part in parts for d in part]
        if len(set(named)) < len(named):
            parser.error(f"--set {item!r}: a run is named twice")
        lines += [*set_tables(label, parts, args.seed), ""]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
