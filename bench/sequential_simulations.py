"""The simulations behind docs/results/sequential.md, from recorded rows (no LM calls).

(a) A/A: each comparison's paired differences with rag, signs flipped at random (a true difference of 0 with the
real spread of values), in 1,000 seeded orders; how often a test read after every question ever says "different":
the fixed-n test (exact McNemar for accuracy, paired t for log p(gold)) read after each question from the 10th,
the same test read once at the end, the confidence sequence of one measure at alpha, and the reports' rule (two
measures, alpha split).
(b) Real effects: a comparison's paired questions (as observed, or re-centred on a planted mean: the observed spread
around an effect of a chosen size) resampled with replacement to streams of up to --max-n; the
questions the sequence needed to decide (mean, median, the 80th percentile: the sequential n at 80% power) against
the fixed-n test's n at 80% power (normal approximation, checked by resampling at that n).

    .venv/bin/python bench/sequential_simulations.py --run mmlu=runs/margin-mmlu-b4 --out runs/sequential-sims.json

A --run NAME=DIR_A,DIR_B pairs each method across two runs (DIR_A − DIR_B) instead of with rag: a fit's held-out
run against an eval of the same questions ("heldout" is the name the real-effects list reads).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hyporag.eval import (  # noqa: E402
    REGISTRY,
    BettingCS,
    by_fingerprint,
    by_method,
    current_rows,
    order_of,
    paired_values,
    questions_for_power,
    questions_for_power_mcnemar,
    run_order,
)

ALPHA = 0.05
# (run, method, measure, planted mean): None resamples the observed differences as they are; a number re-centres
# them on it first (the real spread of a comparison, an effect of a chosen size), for a continuous measure only
REAL = (("mmlu", "cot", "log_p_gold_clipped", None), ("mmlu", "cot", "accuracy", None),
        ("mmlu", "hcqr", "log_p_gold_clipped", None), ("mmlu", "hcqr", "log_p_gold_clipped", 0.1),
        ("mmlu", "hcqr", "log_p_gold_clipped", 0.2), ("mmlu", "hcqr", "log_p_gold_clipped", 0.3),
        ("mmlu", "hcqr", "margin", 0.2), ("medqa", "hcqr", "margin", None),
        ("medqa", "hcqr", "log_p_gold_clipped", None), ("medqa", "cot", "log_p_gold_clipped", None),
        ("heldout", "rag", "log_p_gold_clipped", None), ("heldout", "rag", "margin", None))
# what the range costs: the planted 0.2 of log p(gold) again, its differences clipped to [-c, c] and bet on as such
NARROWED = (("mmlu", "hcqr", "log_p_gold_clipped", 0.2, 2.0), ("mmlu", "hcqr", "log_p_gold_clipped", 0.2, 1.0))


def wilson(k: int, n: int) -> tuple[float, float]:
    low, high = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
    return round(low, 4), round(high, 4)


def first_exclusion(values: np.ndarray, measure: str, alpha: float, c: float | None = None) -> int | None:
    """The question at which the sequence first excludes 0 (None: never); `c` narrows the range it bets on."""
    c = c or REGISTRY[measure].span
    sequence = BettingCS(-c, c, alpha)
    for t, value in enumerate(values, start=1):
        lower, upper = sequence.update(min(c, max(-c, float(value))))
        if lower > 0 or upper < 0:
            return t
    return None


def naive_p_values(values: np.ndarray, measure: str, start: int = 10) -> list[float]:
    """The fixed-n test's p-value after each question from `start`."""
    out = []
    for n in range(start, len(values) + 1):
        seen = values[:n]
        if measure == "accuracy":
            b, c = int(np.sum(seen > 0)), int(np.sum(seen < 0))
            out.append(stats.binomtest(b, b + c).pvalue if b + c else 1.0)
        else:
            sd = float(np.std(seen, ddof=1))
            out.append(1.0 if sd == 0 else float(stats.ttest_1samp(seen, 0.0).pvalue))
    return out


def across_runs(name: str, run_a: Path, run_b: Path) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """(name, method) -> each method both runs hold, run_a's rows − run_b's paired by question fingerprint, as the
    regression gate pairs them (a fit's held-out program against the same method in another run)."""
    settings, rows_a, _, _ = current_rows(run_a)
    _, rows_b, _, _ = current_rows(run_b)
    a, b, order = by_fingerprint(rows_a), by_fingerprint(rows_b), order_of(settings, rows_a)
    return {(name, method): {m: np.array(paired_values(a[method], b[method], order, REGISTRY[m])[0])
                             for m in ("accuracy", "log_p_gold_clipped", "margin")}
            for method in a.keys() & b.keys()}


def paired_runs(runs: dict[str, Path]) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """(run, method) -> the paired differences with rag per measure, in the run's order; a NAME=DIR_A,DIR_B entry
    pairs each method across the two runs instead."""
    out = {}
    for name, run_dir in runs.items():
        if "," in str(run_dir):
            out.update(across_runs(name, *(Path(p) for p in str(run_dir).split(",", 1))))
            continue
        settings, rows, methods, _ = current_rows(run_dir)
        grouped = by_method([r for r in rows if not r.get("error")])
        order = run_order(settings, rows)
        for method in grouped:
            if method == "rag" or "rag" not in grouped:
                continue
            out[(name, method)] = {m: np.array(paired_values(grouped[method], grouped["rag"], order, REGISTRY[m])[0])
                                   for m in ("accuracy", "log_p_gold_clipped", "margin")}
    return out


def null_streams(pairs: dict, orders: int, seed: int) -> list[dict]:
    table = []
    for (run, method), measures in pairs.items():
        rng = np.random.default_rng(seed)
        counts = dict.fromkeys(("naive_any_acc", "naive_end_acc", "seq_acc", "naive_any_lp", "naive_end_lp",
                                "seq_lp", "rule"), 0)
        acc, lp = measures["accuracy"], measures["log_p_gold_clipped"]
        n = min(len(acc), len(lp))
        if n < 10:
            raise SystemExit(f"{run}: {method} has {n} paired question(s); the naive test is read from the 10th")
        started = time.perf_counter()
        for _ in range(orders):
            signs, order = rng.choice([-1.0, 1.0], size=n), rng.permutation(n)
            a, p = (acc[:n] * signs)[order], (lp[:n] * signs)[order]
            naive_a, naive_p = naive_p_values(a, "accuracy"), naive_p_values(p, "log_p_gold_clipped")
            counts["naive_any_acc"] += min(naive_a) < ALPHA
            counts["naive_end_acc"] += naive_a[-1] < ALPHA
            counts["naive_any_lp"] += min(naive_p) < ALPHA
            counts["naive_end_lp"] += naive_p[-1] < ALPHA
            counts["seq_acc"] += first_exclusion(a, "accuracy", ALPHA) is not None
            counts["seq_lp"] += first_exclusion(p, "log_p_gold_clipped", ALPHA) is not None
            counts["rule"] += (first_exclusion(a, "accuracy", ALPHA / 2) is not None
                               or first_exclusion(p, "log_p_gold_clipped", ALPHA / 2) is not None)
        table.append({"run": run, "method": method, "n": n, "orders": orders,
                      "discordant": int(np.sum(acc != 0)), "seconds": round(time.perf_counter() - started, 1),
                      **{k: {"rate": v / orders, "ci95": wilson(v, orders)} for k, v in counts.items()}})
        print(f"A/A {run} {method}: " + ", ".join(f"{k} {v / orders:.3f}" for k, v in counts.items()),
              flush=True)
    return table


def fixed_n(values: np.ndarray, measure: str) -> int | None:
    if measure == "accuracy":
        return questions_for_power_mcnemar(int(np.sum(values > 0)), int(np.sum(values < 0)), len(values))
    return questions_for_power(values)


def fixed_power(values: np.ndarray, measure: str, n: int, sims: int, rng: np.random.Generator) -> float:
    """The fixed-n test's power at n, by resampling the observed questions."""
    hits = 0
    for _ in range(sims):
        drawn = values[rng.integers(0, len(values), size=n)]
        hits += naive_p_values(drawn, measure, start=n)[-1] < ALPHA
    return hits / sims


def real_effects(pairs: dict, resamples: int, max_n: int, seed: int) -> list[dict]:
    table = []
    for run, method, measure, planted, c in [(*entry, None) for entry in REAL] + list(NARROWED):
        if (run, method) not in pairs:
            print(f"skipped: no {method} rows in the {run} run", flush=True)
            continue
        values = pairs[(run, method)][measure]
        if planted is not None:
            values = values - values.mean() + planted
        if c is not None:
            values = np.clip(values, -c, c)
        rng = np.random.default_rng(seed)
        points = []
        for _ in range(resamples):
            points.append(first_exclusion(values[rng.integers(0, len(values), size=max_n)], measure, ALPHA, c))
        decided = sorted(p for p in points if p is not None)
        counted = np.array([max_n if p is None else p for p in points], dtype=float)
        n80 = decided[math.ceil(0.8 * resamples) - 1] if len(decided) >= math.ceil(0.8 * resamples) else None
        fixed = fixed_n(values, measure)
        power_at_fixed = fixed_power(values, measure, fixed, 300, rng) if fixed and fixed <= 5000 else None
        row = {"run": run, "method": method, "measure": measure, "planted_mean": planted,
               "range": c or REGISTRY[measure].span, "observed_n": len(values),
               "observed_mean": round(float(np.mean(values)), 4), "max_n": max_n, "resamples": resamples,
               "power_within_max_n": len(decided) / resamples, "mean_questions": round(float(counted.mean()), 1),
               "median_questions": float(np.median(counted)), "sequential_n80": n80, "fixed_n80": fixed,
               "fixed_power_at_n80": power_at_fixed,
               "ratio_mean_to_fixed": round(float(counted.mean()) / fixed, 2) if fixed else None,
               "ratio_n80_to_fixed": round(n80 / fixed, 2) if fixed and n80 else None}
        table.append(row)
        print(json.dumps(row), flush=True)
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", required=True, metavar="NAME=DIR")
    parser.add_argument("--orders", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--max-n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    runs = {k: Path(v) for k, v in (item.split("=", 1) for item in args.run)}
    pairs = paired_runs(runs)
    result = {"command": " ".join(["bench/sequential_simulations.py", *(argv or sys.argv[1:])]),
              "alpha": ALPHA, "null": null_streams(pairs, args.orders, args.seed),
              "real": real_effects(pairs, args.resamples, args.max_n, args.seed)}
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
