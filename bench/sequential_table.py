"""docs/results/sequential.md's tables, drawn from bench/sequential_simulations.py's JSON and the rows it read (no
simulation is re-run): the A/A false-decision rates, and questions to a decision against the oracle, beside the
floor no test valid for every bounded distribution can beat on that population.

    .venv/bin/python bench/sequential_table.py docs/results/rows/sequential-sims-mmlu.json.gz

The floor: a test that is valid for every distribution on the measure's range [-c, c] grows its evidence against
"no difference" at most by KL_inf = max over bets |b| <= 1/c of E log(1 + b d) per question (the best constant bet
that cannot go bankrupt on a difference at either end of the range; Waudby-Smith & Ramdas 2024, sec. 5); reaching
log(2/alpha) then takes at least log(2/alpha) / KL_inf questions on average (Wald's identity, overshoot ignored).
When the Kelly bet mu / sigma^2 lies inside the range this is about 2 log(2/alpha) sigma^2 / mu^2, the oracle's own
order; when the range caps the bet (small spread against the range, as p(gold)'s), no valid test reaches the oracle.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy import optimize

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from sequential_simulations import paired_runs, population  # noqa: E402

from hyporag.eval import REGISTRY, read_bytes  # noqa: E402


def kl_inf(values: np.ndarray, span: float) -> float:
    """The best constant bet's expected log-growth per question on this population (either direction)."""
    cap = (1 - 1e-9) / span

    def loss(bet: float) -> float:
        return -float(np.mean(np.log1p(bet * values)))

    best = optimize.minimize_scalar(loss, bounds=(-cap, cap), method="bounded")
    return max(0.0, -best.fun)


def floor_questions(values: np.ndarray, span: float, alpha: float) -> float | None:
    growth = kl_inf(values, span)
    return math.log(2 / alpha) / growth if growth > 0 else None


def aa_table(aa: list[dict]) -> str:
    measures = [m for m in REGISTRY if any(f"test:{m}" in row for row in aa)]
    head = ["comparison (paired with rag, signs flipped)"] + [f"{REGISTRY[m].label}: watched / test" for m in measures]
    lines = ["| " + " | ".join(head) + " | earlier rule |", "|---" + "|---:" * (len(measures) + 1) + "|"]
    for row in aa:
        cells = []
        for m in measures:
            naive, test = row.get(f"naive:{m}"), row.get(f"test:{m}")
            cells.append("–" if test is None else
                         f"{naive['rate']:.3f} / {test['rate']:.3f} [{test['wilson'][0]:.3f}, {test['wilson'][1]:.3f}]")
        earlier = row.get("earlier rule")
        cells.append("–" if earlier is None else f"{earlier['rate']:.3f}")
        lines.append(f"| {row['population']} ({row['questions']} q) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def floors_of(sims: dict, pairs: dict) -> list[float | None]:
    """Each effect row's floor over its oracle n (None where either cannot be read), computed once for both tables."""
    floors = []
    for row in sims["effects"]:
        streams = pairs[(row["run"], row["method"])][row["measure"]]
        values = population(streams[~np.isnan(streams)], row["measure"], row["planted"])
        floor = floor_questions(values, REGISTRY[row["measure"]].span, sims["alpha"])
        floors.append(floor / row["oracle"] if floor and row["oracle"] else None)
    return floors


def effects_table(sims: dict, floors: list[float | None]) -> str:
    lines = ["| comparison, measure | effect (sd) | oracle n | floor / oracle | test: mean / oracle | test: p80 / "
             "oracle | test: mean / half-effect plan | decided by 1,000 | sequence alone: mean / oracle |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row, floor in zip(sims["effects"], floors, strict=True):
        if (not row.get("readable") and row["planted"] is None) or floor is None:
            continue  # an observed effect whose oracle is beyond the streams: no ratio can be read
        test, sequence = row["test"], row["sequence"]
        kind = "observed" if row["planted"] is None else "planted"
        star = "" if row.get("readable") else " †"
        lines.append(
            f"| {row['run']}: {row['method']} vs rag, {REGISTRY[row['measure']].label} | {row['mean']:+.3f} "
            f"({row['sd']:.3f}, {kind}) | {row['oracle']} | {floor:.2f} | "
            f"{test['vs_oracle']:.2f}{star} | {test['p80_vs_oracle']:.2f} | {test['vs_half_effect_plan']:.2f}{star} | "
            f"{test['decided']:.3f} | {sequence['vs_oracle']:.2f}{star} |")
    return "\n".join(lines)


def summary_table(sims: dict, floors: list[float | None]) -> str:
    """Per measure and oracle size (planted effects): the range over the comparisons of each ratio."""
    groups: dict[tuple[str, int], list[tuple[float, ...]]] = {}
    for row, floor in zip(sims["effects"], floors, strict=True):
        if row["planted"] is None or floor is None:
            continue
        size = 100 * round(row["oracle"] / 100)
        groups.setdefault((row["measure"], size), []).append(
            (floor, row["test"]["vs_oracle"], row["test"]["p80_vs_oracle"], row["test"]["vs_half_effect_plan"],
             row["sequence"]["vs_oracle"], row["test"]["decided"]))

    def span(values: list[float]) -> str:
        low, high = min(values), max(values)
        return f"{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}–{high:.2f}"

    lines = ["| measure | oracle n | floor / oracle | test: mean / oracle | test: p80 / oracle | "
             "test: mean / half-effect plan | sequence alone: mean / oracle |", "|---|---:|---:|---:|---:|---:|---:|"]
    for (measure, size), rows in sorted(groups.items(), key=lambda item: (list(REGISTRY).index(item[0][0]),
                                                                           item[0][1])):
        cut = " †" if min(r[5] for r in rows) < 0.99 else ""
        columns = list(zip(*rows, strict=True))
        lines.append(f"| {REGISTRY[measure].label} | {size} | {span(columns[0])} | {span(columns[1])}{cut} | "
                     f"{span(columns[2])} | {span(columns[3])}{cut} | {span(columns[4])}{cut} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sims", help="the JSON bench/sequential_simulations.py wrote")
    args = parser.parse_args(argv)
    sims = json.loads(read_bytes(Path(args.sims)))  # plain or gzip-packed, as packed runs are read
    floors = floors_of(sims, paired_runs({name: Path(run) for name, run in sims["runs"].items()}))
    print(aa_table(sims["aa"]))
    print()
    print(summary_table(sims, floors))
    print()
    print(effects_table(sims, floors))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
