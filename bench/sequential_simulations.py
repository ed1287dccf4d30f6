"""The simulations behind docs/results/sequential.md, from recorded rows (no LM calls): what deciding costs against
the oracle, and how often it is wrong.

(a) A/A: each comparison's paired differences with rag, signs flipped at random (a true difference of 0 with the
real spread), in --orders seeded orders of the run's questions, and synthetic mean-zero nulls skewed as hyporag's
rows can be (rare large losses, many small gains): how often each procedure, read after every question, ever says
"different": the fixed-n test read after each question from the 10th (McNemar for accuracy, paired t otherwise),
the earlier rule (confidence sequences on accuracy and clipped log p(gold), alpha split over the two), and the
betting test (aGRAPA) on each registered measure at the whole alpha.
(b) Questions to a decision: a comparison's paired questions (as observed, or re-centred on a planted mean with the
observed spread) resampled to streams of up to --max-n; for each measure the mean and 80th percentile of the
questions the procedure needed, divided by the oracle (the fixed-n test of 80% power planned at the true effect:
normal approximation with the true spread; McNemar's for accuracy), and the mean divided by a fixed-n test planned
at half the true effect (4x the oracle's questions). A stream not decided by --max-n counts as --max-n.

    .venv/bin/python bench/sequential_simulations.py --run mmlu=docs/results/rows/joint-mmlu-b4 \\
        --out runs/sequential-sims.json
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
    BettingTest,
    by_method,
    current_rows,
    questions_for_power,
    questions_for_power_mcnemar,
    run_order,
)

ALPHA = 0.05
EARLIER = ("accuracy", "log_p_gold_clipped")  # the rule of the sequences before one deciding measure
Z = stats.norm.ppf(1 - ALPHA / 2) + stats.norm.ppf(0.8)


def wilson(k: int, n: int) -> list[float]:
    low, high = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
    return [round(low, 4), round(high, 4)]


def test_decides(values: np.ndarray, span: float, alpha: float = ALPHA) -> int | None:
    """The question at which the betting test says better or worse (None: never)."""
    test = BettingTest(span, alpha)
    for t, value in enumerate(values, start=1):
        if test.update(float(value)) != "undecided":
            return t
    return None


def sequence_excludes(values: np.ndarray, span: float, alpha: float, grid: int = 400) -> int | None:
    """The question at which the confidence sequence first leaves 0 out (None: never)."""
    sequence = BettingCS(-span, span, alpha, grid=grid)
    for t, value in enumerate(values, start=1):
        lower, upper = sequence.update(float(value))
        if lower > 0 or upper < 0:
            return t
    return None


def earlier_rule(streams: dict[str, np.ndarray]) -> int | None:
    """The earlier reports' rule: either of two sequences (accuracy, clipped log p(gold)) at alpha/2 leaves 0 out."""
    points = [sequence_excludes(streams[m], REGISTRY[m].span, ALPHA / 2) for m in EARLIER if m in streams]
    known = [p for p in points if p is not None]
    return min(known) if known else None


def naive_watched(values: np.ndarray, measure: str, start: int = 10) -> bool:
    """The fixed-n test read after every question from `start`: does it ever say "different"?"""
    for n in range(start, len(values) + 1):
        seen = values[:n]
        if measure == "accuracy":
            b, c = int(np.sum(seen > 0)), int(np.sum(seen < 0))
            p = stats.binomtest(b, b + c).pvalue if b + c else 1.0
        else:
            sd = float(np.std(seen, ddof=1))
            p = 1.0 if sd == 0 else float(stats.ttest_1samp(seen, 0.0).pvalue)
        if p < ALPHA:
            return True
    return False


def paired_runs(runs: dict[str, Path]) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """(run, method) -> its paired differences with rag on every registered measure, in the run's order (aligned:
    a question without a value on one measure is NaN there)."""
    out = {}
    for name, run_dir in runs.items():
        settings, rows, _, _ = current_rows(run_dir)
        grouped = by_method([r for r in rows if not r.get("error")])
        order = run_order(settings, rows)
        for method in grouped:
            if method == "rag" or "rag" not in grouped:
                continue
            shared = [q for q in order if q in grouped[method] and q in grouped["rag"]]
            out[(name, method)] = {}
            for measure in REGISTRY.values():
                values = [measure.difference(grouped[method][q], grouped["rag"][q]) for q in shared]
                out[(name, method)][measure.name] = np.array([np.nan if v is None else v for v in values])
    return out


def skewed_nulls(n: int) -> dict[str, dict[str, np.ndarray]]:
    """Mean-zero populations with rare large losses, on p(gold)'s and accuracy's ranges, for the A/A table."""
    return {"skewed-p": {"p_gold": np.where(np.arange(n) % 10 == 0, -0.9, 0.1)},
            "skewed-accuracy": {"accuracy": np.where(np.arange(n) % 8 == 0, -1.0, 0.0) + np.where(
                np.arange(n) % 8 == 4, 1.0, 0.0)}}


def aa(pairs: dict, orders: int, seed: int) -> list[dict]:
    """False decisions under sign-flipped (and synthetic skewed) nulls, per comparison, measure and procedure."""
    rng = np.random.default_rng(seed)
    out = []
    populations = {f"{run}:{method}": streams for (run, method), streams in pairs.items()}
    populations.update(skewed_nulls(100))
    for name, streams in populations.items():
        synthetic = name.startswith("skewed")
        counts: dict[str, int] = {}
        for _ in range(orders):
            flips = None if synthetic else rng.choice([-1.0, 1.0], size=len(next(iter(streams.values()))))
            order = rng.permutation(len(next(iter(streams.values()))))
            drawn = {}
            for measure, values in streams.items():
                v = (values if synthetic else values * flips)[order]
                drawn[measure] = v[~np.isnan(v)]
            for measure, v in drawn.items():
                if not len(v):
                    continue
                span = REGISTRY[measure].span
                counts[f"naive:{measure}"] = counts.get(f"naive:{measure}", 0) + naive_watched(v, measure)
                counts[f"test:{measure}"] = counts.get(f"test:{measure}", 0) + (test_decides(v, span) is not None)
            if not synthetic:
                counts["earlier rule"] = counts.get("earlier rule", 0) + (earlier_rule(drawn) is not None)
        out.append({"population": name, "orders": orders, "questions": len(next(iter(streams.values()))),
                    **{k: {"rate": round(c / orders, 4), "wilson": wilson(c, orders)} for k, c in counts.items()}})
        print(json.dumps(out[-1]), flush=True)
    return out


def oracle(values: np.ndarray, measure: str) -> int | None:
    """The fixed-n questions of 80% power at the population's own mean and spread."""
    if measure == "accuracy":
        return questions_for_power_mcnemar(int(np.sum(values > 0)), int(np.sum(values < 0)), len(values))
    return questions_for_power(values)


def population(values: np.ndarray, measure: str, planted: float | None) -> np.ndarray:
    """The paired differences a comparison's streams are drawn from: as observed, or carrying a planted mean. A
    continuous measure keeps its observed spread around the new mean (clipped to its range); accuracy keeps its
    observed share of split questions, the planted difference moving split questions from one side to the other."""
    if planted is None:
        return values
    if measure == "accuracy":
        split = float(np.mean(values != 0))
        if abs(planted) > split:
            return np.array([])
        size = 10_000  # the three-point population at its exact shares
        wins, losses = round(size * (split + planted) / 2), round(size * (split - planted) / 2)
        return np.array([1.0] * wins + [-1.0] * losses + [0.0] * (size - wins - losses))
    span = REGISTRY[measure].span
    return np.clip(values - values.mean() + planted, -span, span)


def to_decision(values: np.ndarray, measure: str, max_n: int, resamples: int, rng: np.random.Generator) -> dict:
    """Questions to a decision, resampled: the betting test and the sequence alone (today's) on this measure."""
    span = REGISTRY[measure].span
    tests, sequences = [], []
    for _ in range(resamples):
        stream = values[rng.integers(0, len(values), size=max_n)]
        tests.append(test_decides(stream, span) or max_n)
        sequences.append(sequence_excludes(stream, span, ALPHA) or max_n)
    return {"test": tests, "sequence": sequences}


def effects(pairs: dict, plants: list[tuple[str, str, str, float | None]], max_n: int, resamples: int,
            seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for run, method, measure, planted in plants:
        streams = pairs.get((run, method))
        if streams is None or measure not in streams:
            continue
        values = population(streams[measure][~np.isnan(streams[measure])], measure, planted)
        if not len(values) or values.mean() == 0:
            continue
        n_oracle = oracle(values, measure)
        row = {"run": run, "method": method, "measure": measure, "planted": planted,
               "mean": round(float(values.mean()), 4), "sd": round(float(values.std(ddof=1)), 4),
               "oracle": n_oracle, "max_n": max_n, "resamples": resamples,
               "readable": n_oracle is not None and 4 * n_oracle <= max_n}  # a decision mostly within max_n
        for procedure, points in to_decision(values, measure, max_n, resamples, rng).items():
            points = np.array(points, dtype=float)
            row[procedure] = {"mean": round(float(points.mean()), 1), "p80": float(np.percentile(points, 80)),
                              "decided": round(float(np.mean(points < max_n)), 3),
                              "vs_oracle": round(float(points.mean()) / n_oracle, 2) if n_oracle else None,
                              "p80_vs_oracle": round(float(np.percentile(points, 80)) / n_oracle, 2)
                              if n_oracle else None,
                              "vs_half_effect_plan": round(float(points.mean()) / (4 * n_oracle), 3)
                              if n_oracle else None}
        out.append(row)
        print(json.dumps(row), flush=True)
    return out


def plants_for(pairs: dict) -> list[tuple[str, str, str, float | None]]:
    """Every comparison's observed effect on every measure, and effects planted on its observed spread at sizes a
    fixed-n test of 100-400 questions would see."""
    plants = []
    for (run, method), streams in pairs.items():
        for measure in REGISTRY:
            if measure in streams and np.isfinite(streams[measure]).sum() >= 20:
                plants.append((run, method, measure, None))
    for (run, method), streams in pairs.items():
        for measure in REGISTRY:
            values = streams.get(measure)
            if values is None or np.isfinite(values).sum() < 20:
                continue
            sd = float(np.nanstd(values, ddof=1))
            for n in (100, 200, 400):  # the effect a fixed-n test of n questions sees with 80% power
                plants.append((run, method, measure, round(Z * sd / math.sqrt(n), 4)))
    return plants


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", required=True, metavar="NAME=DIR")
    parser.add_argument("--orders", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--max-n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-aa", action="store_true")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    runs = dict(item.split("=", 1) for item in args.run)
    pairs = paired_runs({k: Path(v) for k, v in runs.items()})
    started = time.perf_counter()
    result = {"runs": runs, "alpha": ALPHA, "orders": args.orders, "resamples": args.resamples, "max_n": args.max_n,
              "aa": [] if args.skip_aa else aa(pairs, args.orders, args.seed),
              "effects": effects(pairs, plants_for(pairs), args.max_n, args.resamples, args.seed + 1)}
    result["seconds"] = round(time.perf_counter() - started, 1)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(f"written: {args.out} ({result['seconds']} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
