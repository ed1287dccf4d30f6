"""The estimate an evaluation prints before its first question when it is to decide (`--until-decided`) or is
asked to plan (`--assume-effect D`, `--plan-from RUN_DIR`): for the assumed accuracy difference, or for each
method's paired questions against the baseline in an earlier run, how many questions and LM calls a decision is
expected to take, and the smallest accuracy difference this run's questions can show."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hyporag.eval.comparisons import DECIDING, paired_questions
from hyporag.eval.paper_analyses import by_method
from hyporag.eval.planning import (
    ASSUMED_DISCORDANCE,
    DecisionPlan,
    assumed_accuracy,
    resampled,
    simulate,
    smallest_detectable,
)
from hyporag.eval.run_report import current_rows
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.settings import EvalSettings

DEFAULT_EFFECT = 0.1  # the accuracy difference assumed when a deciding run is given none


def _described(plan: DecisionPlan, calls_per_q: float) -> str:
    within = f"{plan.decided_share:.0%} of simulated runs decided within the {plan.max_n} questions"
    if plan.decided_share == 0:
        return f"{plan.source}: not decided within {plan.max_n} questions in any simulated run"
    lower = "at least " if plan.decided_share < 1 else ""
    return (f"{plan.source}: decided after {lower}{plan.mean_questions:.0f} questions on average (median "
            f"{plan.median_questions:.0f}; {within}), {lower}{plan.mean_questions * calls_per_q:,.0f} LM calls")


def earlier_pairs(run_dir: str | Path, methods: list[str], baseline: str) -> dict[str, list[dict]]:
    """Each method of this run that `run_dir` holds beside its baseline: its paired questions there."""
    _, rows, _, _ = current_rows(run_dir)
    grouped = by_method([r for r in rows if not r.get("error")])
    if baseline not in grouped:
        raise HyporagError(f"--plan-from {run_dir}: it holds no {baseline} rows (the baseline) to pair with")
    pairs = {m: paired_questions(grouped[m], grouped[baseline]) for m in methods if m != baseline and m in grouped}
    if not pairs:
        raise HyporagError(f"--plan-from {run_dir}: it holds none of this run's methods ({', '.join(methods)}) "
                           f"beside {baseline}")
    return pairs


def decision_plan(settings: EvalSettings, methods: list[str], baseline: str, n: int,
                  calls_per_q: float, seed: int = 0) -> dict[str, Any] | None:
    """The printed lines and their numbers (run.json keeps them), or None when the run neither decides nor plans."""
    if not (settings.until_decided or settings.assume_effect is not None or settings.plan_from):
        return None
    comparisons = max(1, len(methods) - (0 if settings.against else 1))
    alpha_each = settings.alpha / (len(DECIDING) * comparisons)
    plans: dict[str, DecisionPlan] = {}
    if settings.plan_from:
        for method, paired in earlier_pairs(settings.plan_from, methods, baseline).items():
            plans[method] = simulate(resampled(paired), n, alpha_each, f"{method} against {baseline} as in "
                                     f"{settings.plan_from} ({len(paired)} paired questions)", seed=seed)
    else:
        effect = DEFAULT_EFFECT if settings.assume_effect is None else settings.assume_effect
        plans["assumed"] = simulate(assumed_accuracy(effect), n, alpha_each, f"an accuracy difference of {effect:g} "
                                    f"({ASSUMED_DISCORDANCE:.0%} of questions split)", seed=seed)
    smallest = smallest_detectable(n, alpha_each, seed=seed)
    lines = [f"plan: {len(methods)} method(s), {comparisons} comparison(s) at alpha {settings.alpha:g} "
             f"({alpha_each:.4g} each sequence), up to {n} questions"]
    lines += [f"plan: {_described(plan, calls_per_q)}" for plan in plans.values()]
    lines.append(f"plan: the smallest accuracy difference {n} questions decide 80% of the time: "
                 + (f"{smallest:g} ({ASSUMED_DISCORDANCE:.0%} of questions split)" if smallest is not None else
                    "none (too few questions even when every split question goes one way)"))
    return {"lines": lines, "alpha_each": alpha_each, "plans": {k: p.to_dict() for k, p in plans.items()},
            "smallest_detectable": smallest, "calls_per_question": calls_per_q}
