"""docs/results/differential.md's table: every program of a set against `cot` (the same reader without passages),
paired by question across the runs that hold them, with the goal's checks.

    .venv/bin/python bench/differential_table.py --set mmlu-med=docs/results/rows/joint-mmlu-b4,docs/results/rows/\\
        reader-mmlu-b4 [--set medqa-dev=...] [--json runs/differential.json]

A program is a method of one run, named `method (run)`; a run's methods are read from its rows. Per program:
accuracy, mean p(gold), lift over cot in p(gold) with a paired bootstrap 95% interval and Wilcoxon's p, Holm-adjusted
over every program of the set; its echo (the hypothesis names only the closed-book answer) and how often gold is
among the options it names; the share of questions that retrieved; LM calls, prompt tokens processed and seconds per
question beside those of joint rag. Runs are paired only when they answer the same questions (by content) with the
same reader, retriever, index and budget; cot comes from the first run that has it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hyporag.eval import (  # noqa: E402
    REGISTRY,
    by_method,
    current_rows,
    echo_rates,
    holm,
    paired_continuous,
    summarize,
)

SHARED = ("lm_identities", "budget", "retriever", "index_fingerprint", "bm25_search", "reasoning")
P_GOLD = REGISTRY["p_gold"]
GOAL = {"time_vs_joint_rag": 1.5, "echo": 0.5}


def load(runs: list[Path]) -> tuple[dict[str, list[dict]], dict[str, dict]]:
    """Each program's rows (`method (run)`), after checking the runs can be paired."""
    programs: dict[str, list[dict]] = {}
    settings_of: dict[str, dict] = {}
    first = None
    for run in runs:
        settings, rows, _, _ = current_rows(run)
        if first is None:
            first = (run, settings)
        else:
            for key in SHARED:
                if settings.get(key) != first[1].get(key) and None not in (settings.get(key), first[1].get(key)):
                    raise SystemExit(f"{run}: its {key} differs from {first[0]}'s; these runs cannot be paired")
        for method in dict.fromkeys(r["method"] for r in rows):
            if method == "cot" and any(p.startswith("cot ") for p in programs):
                continue  # one cot: the first run's
            name = f"{method} ({run.name})"
            programs[name] = [{**r, "method": name} for r in rows if r["method"] == method]
            settings_of[name] = (settings.get("program") or {}).get(method, {})
    return programs, settings_of


def table(name: str, runs: list[Path], seed: int = 0) -> dict:
    programs, configs = load(runs)
    cot = next((p for p in programs if p.startswith("cot ")), None)
    if cot is None:
        raise SystemExit(f"{name}: no cot rows among {', '.join(map(str, runs))}")
    fingerprints = {r["question_id"]: r["question_fingerprint"] for r in programs[cot]}
    for program, rows in programs.items():  # the same questions, by content
        bad = [r["question_id"] for r in rows if fingerprints.get(r["question_id"], r["question_fingerprint"])
               != r["question_fingerprint"]]
        if bad:
            raise SystemExit(f"{program}: question {bad[0]} is not the one cot answered")
    every = [r for rows in programs.values() for r in rows]
    grouped = by_method([r for r in every if not r.get("error")])
    echoes = echo_rates([{**r, "method": "cot"} if r["method"] == cot else r for r in every])
    summaries = {s.method: s for s in summarize(every)}
    joint_rag = next((p for p in programs if p.startswith("rag ") and configs[p].get("answer_mode", "joint")
                      == "joint" and configs[p].get("retrieve_below") is None), None)
    out = {"set": name, "runs": [str(r) for r in runs], "cot": cot, "joint_rag": joint_rag, "programs": {}}
    for program in programs:
        mine, base = grouped.get(program, {}), grouped.get(cot, {})
        shared = [q for q in mine if q in base]
        lift = [d for q in shared if (d := P_GOLD.difference(mine[q], base[q])) is not None]
        s = summaries[program]
        p_gold = [v for r in mine.values() if (v := P_GOLD.value(r)) is not None]
        out["programs"][program] = {
            "n": s.n, "accuracy": round(s.accuracy, 4), "p_gold": round(float(np.mean(p_gold)), 4) if p_gold else None,
            "lift": None if program == cot else paired_continuous(lift, seed),
            "echo": (echoes.get(program) or {}).get("echo"),
            "names_gold": (echoes.get(program) or {}).get("names_gold"),
            "retrieved": s.retrieved_share if s.retrieved_share is not None else (1.0 if s.retrieves else 0.0),
            "pull_gold": s.pull_gold, "pull_closed_book": (echoes.get(program) or {}).get("pull_closed_book"),
            "calls_per_q": round(s.calls_per_q, 2), "processed_tokens_per_q": s.processed_tokens_per_q,
            "seconds_per_q": round(s.seconds_per_q, 1), "cache_hits": s.cache_hits,
            "settings": {k: configs[program].get(k) for k in ("answer_mode", "retrieve_below", "hypothesis_from",
                                                               "mix", "mix_temperature", "prior_weight")}}
    adjusted = holm({p: (e["lift"] or {}).get("wilcoxon_p") for p, e in out["programs"].items() if p != cot})
    for program, p in adjusted.items():
        entry = out["programs"][program]
        entry["lift"]["wilcoxon_p_holm"] = p
        tokens = out["programs"][joint_rag]["processed_tokens_per_q"] if joint_rag else None
        mine = entry["processed_tokens_per_q"]
        entry["tokens_vs_joint_rag"] = round(mine / tokens, 2) if mine and tokens else None
    return out


def markdown(result: dict) -> str:
    lines = [f"**{result['set']}** (cot: {result['cot']}; runs: {', '.join(result['runs'])})", "",
             "| program | n | accuracy | p(gold) | lift over cot in p(gold) (95% CI) | Wilcoxon p (Holm over every "
             "program) | echo | gold among its options | retrieved | calls/q | tokens processed/q (× joint rag) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def cell(value, pattern="{:.3f}"):
        return "–" if value is None else pattern.format(value)

    for program, e in result["programs"].items():
        lift = e["lift"] or {}
        interval = ("–" if lift.get("mean") is None else
                    f"{lift['mean']:+.3f} ({lift['ci95_low']:+.3f} to {lift['ci95_high']:+.3f})")
        lines.append(f"| {program} | {e['n']} | {e['accuracy']:.3f} | {cell(e['p_gold'])} | {interval} | "
                     f"{cell(lift.get('wilcoxon_p'))} ({cell(lift.get('wilcoxon_p_holm'))}) | {cell(e['echo'])} | "
                     f"{cell(e['names_gold'])} | {cell(e['retrieved'], '{:.2f}')} | {e['calls_per_q']:.2f} | "
                     f"{cell(e['processed_tokens_per_q'], '{:.0f}')} "
                     f"({cell(e.get('tokens_vs_joint_rag'), '{:.2f}')}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", required=True, metavar="NAME=RUN[,RUN...]")
    parser.add_argument("--json")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    results = []
    for item in args.set:
        name, _, runs = item.partition("=")
        results.append(table(name, [Path(r) for r in runs.split(",") if r], args.seed))
        print(markdown(results[-1]) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
