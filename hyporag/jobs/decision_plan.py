"""The estimate an evaluation prints before its first question when it is to decide (`--until-decided`) or is
asked to plan (`--assume-effect D`, `--plan-from RUN_DIR`): for the assumed difference on the deciding measure, or
for each method's paired questions against the baseline in an earlier run, how many questions and LM calls a
decision is expected to take, and the smallest difference this run's questions can show."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hyporag.eval.comparisons import paired_questions
from hyporag.eval.measures import Measure
from hyporag.eval.paper_analyses import by_method
from hyporag.eval.planning import (
    ASSUMED_DISCORDANCE,
    PLANNING_EFFECT,
    DecisionPlan,
    assumed,
    resampled,
    simulate,
    smallest_detectable,
)
from hyporag.eval.run_rows import current_rows
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.settings import EvalSettings


def _described(plan: DecisionPlan, calls_per_q: float) -> str:
    within = f"{plan.decided_share:.0%} of simulated runs decided within the {plan.max_n} questions"
    if plan.decided_share == 0:
        return f"{plan.source}: not decided within {plan.max_n} questions in any simulated run"
    lower = "at least " if plan.decided_share < 1 else ""
    return (f"{plan.source}: decided after {lower}{plan.mean_questions:.0f} questions on average (median "
            f"{plan.median_questions:.0f}; {within}), {lower}{plan.mean_questions * calls_per_q:,.0f} LM calls")


def earlier_pairs(run_dir: str | Path, methods: list[str], baseline: str, measure: Measure
                  ) -> dict[str, list[dict]]:
    """Each method of this run that `run_dir` holds beside its baseline: its paired questions there."""
    _, rows, _, _ = current_rows(run_dir)
    grouped = by_method([r for r in rows if not r.get("error")])
    if baseline not in grouped:
        raise HyporagError(f"--plan-from {run_dir}: it holds no {baseline} rows (the baseline) to pair with")
    pairs = {m: paired_questions(grouped[m], grouped[baseline], [measure.name]) for m in methods
             if m != baseline and m in grouped}
    if not pairs:
        raise HyporagError(f"--plan-from {run_dir}: it holds none of this run's methods ({', '.join(methods)}) "
                           f"beside {baseline}")
    if all(q[measure.name] is None for paired in pairs.values() for q in paired):
        raise HyporagError(f"--plan-from {run_dir}: its rows hold no {measure.label} to plan from (decide on "
                           "another measure with --decide-on)")
    return pairs


def decision_plan(settings: EvalSettings, methods: list[str], baseline: str, n: int,
                  calls_per_q: float, seed: int = 0) -> dict[str, Any] | None:
    """The printed lines and their numbers (run.json keeps them), or None when the run neither decides nor plans."""
    if not (settings.until_decided or settings.assume_effect is not None or settings.plan_from):
        return None
    measure = settings.deciding
    comparisons = max(1, len(methods) - (0 if settings.against else 1))
    alpha_each = settings.alpha / comparisons
    plans: dict[str, DecisionPlan] = {}
    if settings.plan_from:
        for method, paired in earlier_pairs(settings.plan_from, methods, baseline, measure).items():
            plans[method] = simulate(resampled(paired, measure), n, alpha_each, f"{method} against {baseline} as "
                                     f"in {settings.plan_from} ({len(paired)} paired questions)", measure,
                                     settings.delta, seed=seed)
    else:
        effect = settings.assume_effect or PLANNING_EFFECT.get(measure.name, measure.delta * 2)
        split = f"{ASSUMED_DISCORDANCE:.0%} of questions split" if measure.name == "accuracy" else "assumed spread"
        plans["assumed"] = simulate(assumed(effect, measure), n, alpha_each, f"a {measure.label} difference of "
                                    f"{effect:g} ({split})", measure, settings.delta, seed=seed)
    smallest = smallest_detectable(n, alpha_each, measure, seed=seed)
    lines = [f"plan: {len(methods)} method(s), {comparisons} comparison(s) decided on {measure.label} at alpha "
             f"{settings.alpha:g} ({alpha_each:.4g} each), up to {n} questions"]
    lines += [f"plan: {_described(plan, calls_per_q)}" for plan in plans.values()]
    lines.append(f"plan: the smallest {measure.label} difference {n} questions decide 80% of the time: "
                 + (f"{smallest:g}" if smallest is not None else "none (too few questions even for the largest)"))
    return {"lines": lines, "alpha_each": alpha_each, "decide_on": measure.name,
            "plans": {k: p.to_dict() for k, p in plans.items()}, "smallest_detectable": smallest,
            "calls_per_question": calls_per_q}
