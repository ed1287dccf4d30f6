"""The decision margin across a run: how sure the reader was of the gold option under each method, how far each
method's passages moved that belief from no retrieval (context lift over `cot`), and paired tests on these
continuous measures beside McNemar on accuracy, each with the questions a test at 80% power would need.

Per row the measures come from the answer call's own option probabilities (`hyporag.lm.option_probs`); a row
without a complete distribution has none, and is left out of these statistics (its count is reported).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import stats

from hyporag.eval.measures import LOG_P_FLOOR, REGISTRY  # noqa: F401 (LOG_P_FLOOR re-exported)
from hyporag.eval.paper_analyses import by_method
from hyporag.eval.row import ResultRow

LEAD = "log_p_gold_clipped"  # the fixed-n tables' lead measure where a run names no deciding measure (older runs)
POWER = 0.8
ALPHA = 0.05


def complete(row: ResultRow) -> bool:
    """Whether the row holds the reader's whole distribution over the options, undamaged (eval.belief)."""
    return row.option_logprob_status == "ok" and bool(row.option_logprobs) and not row.damaged_distribution


def status_of(row: ResultRow) -> str:
    return "damaged" if row.damaged_distribution else row.option_logprob_status or "none"


def _rank(row: ResultRow) -> float | None:
    if not complete(row) or row.gold not in row.option_logprobs:
        return None
    return float(1 + sum(v > row.option_logprobs[row.gold] for v in row.option_logprobs.values()))


# shown in the fixed-n tables only, never decided on: log p(gold) without its clip, the gold option's rank
REPORT_ONLY: dict[str, tuple[Callable[[ResultRow], float | None], bool]] = {
    "log_p_gold": (lambda r: r.log_p_gold, True),
    "gold_rank": (_rank, False),
}


def report_measures() -> dict[str, tuple[Callable[[ResultRow], float | None], bool]]:
    """name -> (a row's value or None, higher is better): every deciding measure of the registry (read now, so one
    registered later counts) and the report-only ones."""
    return {**{m.name: (m.value, m.higher_is_better) for m in REGISTRY.values() if m.name != "accuracy"},
            **REPORT_ONLY}


def _by_method(rows: list[dict]) -> dict[str, dict[str, ResultRow]]:
    """Rows by method and question, errored ones left out (they hold no distribution)."""
    return by_method([r for r in rows if not r.get("error")])


def method_means(rows: list[dict]) -> dict[str, dict]:
    """Per method: rows with a complete distribution, their mean of each measure, and why the others have none."""
    out = {}
    for method, qs in _by_method(rows).items():
        statuses: dict[str, int] = {}
        for r in qs.values():
            statuses[status_of(r)] = statuses.get(status_of(r), 0) + 1
        means = {}
        for name, (value, _) in report_measures().items():
            known = [v for r in qs.values() if (v := value(r)) is not None]
            means[name] = float(np.mean(known)) if known else None
        out[method] = {"with_probabilities": statuses.get("ok", 0), "statuses": statuses, **means}
    return out


def questions_for_power(differences: np.ndarray) -> int | None:
    """Questions a two-sided paired test at α = 0.05 needs for 80% power against the observed mean difference and
    its spread (normal approximation): None when the difference is 0 or cannot be estimated."""
    if len(differences) < 2 or not np.any(differences):
        return None
    mean, sd = float(np.mean(differences)), float(np.std(differences, ddof=1))
    if mean == 0 or sd == 0:
        return None
    z = stats.norm.ppf(1 - ALPHA / 2) + stats.norm.ppf(POWER)
    return math.ceil((z * sd / mean) ** 2)


def questions_for_power_mcnemar(a_only: int, b_only: int, n: int) -> int | None:
    """Questions McNemar's test needs for 80% power at the observed discordant shares (Connor, 1987)."""
    if n == 0 or a_only == b_only:
        return None
    p10, p01 = a_only / n, b_only / n
    delta, discordant = p10 - p01, p10 + p01
    z_a, z_b = stats.norm.ppf(1 - ALPHA / 2), stats.norm.ppf(POWER)
    return math.ceil((z_a * math.sqrt(discordant) + z_b * math.sqrt(max(discordant - delta ** 2, 0.0))) ** 2
                     / delta ** 2)


MIN_CLUSTERS = 10  # fewer groups than this and resampling whole groups is degenerate (two groups: ~three values)


def grouping_of(groups: list[str] | None) -> str | None:
    """How an interval treats the questions' groups: resampled whole ("clustered", from MIN_CLUSTERS groups: the groups
    are a sample of many), resampled within each group ("stratified", 2 to MIN_CLUSTERS - 1: the few datasets are
    fixed, not drawn, and a bootstrap over two clusters can only ever return about three means), or not at all."""
    count = len(set(groups)) if groups is not None else 0
    return "clustered" if count >= MIN_CLUSTERS else "stratified" if count > 1 else None


def cluster_interval(d: np.ndarray, groups: list[str], seed: int, resamples: int = 2000) -> tuple[float, float]:
    """A 95% percentile interval of the mean from resampling whole groups (questions of one dataset move together),
    as clustered standard errors do (Miller 2024, "Adding Error Bars to Evals"; inspect_ai's stderr(cluster=))."""
    names = sorted(set(groups))
    index = np.array([names.index(g) for g in groups])
    sums, counts = np.bincount(index, weights=d), np.bincount(index)
    draws = np.random.default_rng(seed).integers(0, len(names), size=(resamples, len(names)))
    means = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def stratified_interval(d: np.ndarray, groups: list[str], seed: int, resamples: int = 2000) -> tuple[float, float]:
    """A 95% percentile interval of the mean from resampling questions within each group, every group keeping its
    size: the mix of datasets is held as it was drawn, the questions inside each are the sample."""
    rng = np.random.default_rng(seed)
    labels = np.asarray(groups)
    totals = np.zeros(resamples)
    for name in sorted(set(groups)):
        values = d[labels == name]
        totals += values[rng.integers(0, len(values), size=(resamples, len(values)))].sum(axis=1)
    means = totals / len(d)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def paired_continuous(differences: list[float], seed: int = 0, groups: list[str] | None = None) -> dict:
    """Mean of paired differences with a seeded bootstrap 95% interval (clustered or stratified by `groups` when the
    questions come from two or more: grouping_of), a Wilcoxon signed-rank p and the questions 80% power would
    need."""
    d = np.asarray(differences, dtype=float)
    if len(d) == 0:
        return {"n": 0, "mean": None, "ci95_low": None, "ci95_high": None, "wilcoxon_p": None, "n_for_power": None}
    grouping = grouping_of(groups)
    if grouping and np.ptp(d) > 0:
        low, high = (cluster_interval if grouping == "clustered" else stratified_interval)(d, groups, seed)
    elif len(d) > 1 and np.ptp(d) > 0:
        interval = stats.bootstrap((d,), np.mean, n_resamples=2000, method="percentile",
                                   rng=np.random.default_rng(seed)).confidence_interval
        low, high = float(interval.low), float(interval.high)
    else:
        low = high = float(d.mean())
    p = float(stats.wilcoxon(d).pvalue) if np.any(d) and len(d) > 1 else 1.0
    return {"n": int(len(d)), "mean": float(d.mean()), "ci95_low": low, "ci95_high": high, "wilcoxon_p": p,
            "n_for_power": questions_for_power(d), "grouping": grouping}


def holm(p_values: dict[str, float | None]) -> dict[str, float | None]:
    """Holm's step-down adjustment of a family of p-values (one per comparison): each is compared with the family's
    level, not its own."""
    known = sorted((p, key) for key, p in p_values.items() if p is not None)
    adjusted, running = {}, 0.0
    for rank, (p, key) in enumerate(known):
        running = max(running, min(1.0, (len(known) - rank) * p))
        adjusted[key] = running
    return {key: adjusted.get(key) for key in p_values}


def paired_measures(rows: list[dict], baseline: str = "rag", seed: int = 0,
                    groups: dict[str, str] | None = None, lead: str = LEAD) -> dict[str, dict]:
    """Each method against `baseline` on the questions both answered with complete distributions: every measure's
    paired statistics (a − baseline; for brier and gold_rank lower is better; intervals clustered or stratified by
    the questions' `groups`: grouping_of), accuracy's power beside them, and the fixed-n p-values Holm-adjusted
    across the methods (accuracy's McNemar and `lead`'s Wilcoxon, each family every method vs the baseline)."""
    grouped = _by_method(rows)
    if baseline not in grouped:
        return {}
    base = grouped[baseline]
    out = {}
    for method, qs in grouped.items():
        if method == baseline:
            continue
        shared = sorted(set(qs) & set(base))
        entry: dict[str, dict] = {}
        for name, (value, _) in report_measures().items():
            pairs = [(q, a, b) for q in shared if (a := value(qs[q])) is not None
                     and (b := value(base[q])) is not None]
            entry[name] = paired_continuous([a - b for _, a, b in pairs], seed,
                                            [groups.get(q, "") for q, _, _ in pairs] if groups else None)
        a_only = sum(qs[q].correct and not base[q].correct for q in shared)
        b_only = sum(base[q].correct and not qs[q].correct for q in shared)
        entry["accuracy"] = {"n": len(shared), "mean": (a_only - b_only) / len(shared) if shared else None,
                             "mcnemar_p": float(stats.binomtest(a_only, a_only + b_only).pvalue) if a_only + b_only
                             else 1.0, "n_for_power": questions_for_power_mcnemar(a_only, b_only, len(shared))}
        out[method] = entry
    for measure, key in (("accuracy", "mcnemar_p"), (lead, "wilcoxon_p")):  # the family: every method vs baseline
        adjusted = holm({m: (e.get(measure) or {}).get(key) for m, e in out.items()})
        for method, p in adjusted.items():
            out[method][measure][f"{key}_holm"] = p
    return out


def context_lift(rows: list[dict], reference: str = "cot", lead: str = LEAD) -> dict[str, dict]:
    """Per method: the `lead` measure with its passages − that of `reference` (the same reader, no retrieval), per
    question (oriented: > 0 is better): mean, share of questions it raised, and the mean per judge label (DUR's
    Entailed / Useful / Not useful) where the context was judged. Empty when `reference` is not in the run."""
    grouped = _by_method(rows)
    if reference not in grouped:
        return {}
    value, higher = report_measures()[lead] if lead != "accuracy" else (REGISTRY["accuracy"].value, True)
    out = {}
    for method, qs in grouped.items():
        if method == reference:
            continue
        lifts = {q: (a - b) if higher else (b - a) for q, r in qs.items() if q in grouped[reference]
                 and (a := value(r)) is not None and (b := value(grouped[reference][q])) is not None}
        if not lifts:
            continue
        by_label: dict[str, list[float]] = {}
        for q, lift in lifts.items():
            if qs[q].judge_label:
                by_label.setdefault(qs[q].judge_label, []).append(lift)
        out[method] = {"n": len(lifts), "mean": float(np.mean(list(lifts.values()))),
                       "positive": sum(v > 0 for v in lifts.values()) / len(lifts),
                       "by_label": {k: {"n": len(v), "mean": float(np.mean(v))} for k, v in sorted(by_label.items())},
                       "per_question": {q: round(v, 6) for q, v in lifts.items()}}
    return out
