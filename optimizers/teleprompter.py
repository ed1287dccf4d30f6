"""Prompt optimization with DSPy teleprompters: BootstrapFewShot(+RandomSearch), MIPROv2, GEPA.

The metric comes from `hyporag.eval.dspy_metrics`, the same functions the evaluation harness reports, and the
program is scored on the validation split before and after, so every compile states what it bought and at what
cost (seconds, LM calls).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import dspy

from hyporag.eval.dspy_metrics import gepa_feedback
from hyporag.eval.engine import answer_all
from hyporag.foundation.errors import ConfigError
from hyporag.lm.cost import CostMeter, live_calls

OPTIMIZERS = ("bootstrap", "bootstrap-rs", "mipro", "gepa")
AUTO = ("light", "medium", "heavy")  # MIPROv2's and GEPA's presets


@dataclass
class CompileResult:
    program: Any
    before: float
    after: float
    seconds: float
    calls: int
    settings: dict[str, Any] = field(default_factory=dict)
    cost_by_phase: dict[str, dict[str, float]] = field(default_factory=dict)


def score(program, examples: list, metric, threads: int = 1) -> float:
    """Mean metric over examples (a failing example scores 0), as a fraction in [0, 1]: the evaluation loop's own
    rows, so validation runs exactly as `hyporag eval` does."""

    rows = answer_all({getattr(program, "method", "program"): program}, examples, threads, metric=metric,
                    progress=True, desc="validation")
    return sum(r["score"] for r in rows) / len(rows) if rows else 0.0


def make_teleprompter(name: str, metric, auto: str = "light", max_demos: int = 4, seed: int = 0, threads: int = 1,
                      reflection_lm=None, candidates: int = 4, max_metric_calls: int | None = None):
    """A DSPy teleprompter. `max_metric_calls` bounds GEPA by program runs instead of an `auto` preset (each run is
    a full program call: on a CPU-only model that is the number that decides whether the compile takes minutes or
    a day)."""
    if name == "bootstrap":
        return dspy.BootstrapFewShot(metric=metric, max_bootstrapped_demos=max_demos, max_labeled_demos=max_demos)
    if name == "bootstrap-rs":
        return dspy.BootstrapFewShotWithRandomSearch(metric=metric, max_bootstrapped_demos=max_demos,
                                                     max_labeled_demos=max_demos, num_candidate_programs=candidates,
                                                     num_threads=threads)
    if name == "mipro":
        return dspy.MIPROv2(metric=metric, prompt_model=reflection_lm, auto=auto, num_threads=threads, seed=seed,
                            max_bootstrapped_demos=max_demos, max_labeled_demos=max_demos)
    if name == "gepa":
        if reflection_lm is None:
            raise ConfigError("GEPA needs a reflection LM (--reflection-lm, default: the hypothesis LM)")
        budget = {"max_metric_calls": max_metric_calls} if max_metric_calls else {"auto": auto}
        return dspy.GEPA(metric=gepa_feedback(metric), reflection_lm=reflection_lm, num_threads=threads, seed=seed,
                         **budget)
    raise ConfigError(f"unknown optimizer {name!r}: use one of {', '.join(OPTIMIZERS)}")


def compile_program(program, trainset: list, valset: list, optimizer: str, metric, roles=None, auto: str = "light",
                    max_demos: int = 4, seed: int = 0, threads: int = 1,
                    max_metric_calls: int | None = None, reflection_lm=None) -> CompileResult:
    """Score on valset, optimize on trainset (MIPRO/GEPA also select on valset), score again.

    Cost is metered per phase (validation scoring vs the optimizer itself), so a user sees what the optimizer
    alone cost and what the before/after measurement added."""
    context = roles.answer.context() if roles is not None else dspy.context()
    reflection = reflection_lm or (roles.hypothesis.lm if roles is not None else dspy.settings.lm)
    meter = CostMeter()
    started = time.perf_counter()
    with context:
        with meter.step("validation"):
            before = score(program, valset, metric, threads)
        teleprompter = make_teleprompter(optimizer, metric, auto, max_demos, seed, threads, reflection,
                                         max_metric_calls=max_metric_calls)
        with meter.step("optimizer"):
            if optimizer in ("mipro", "gepa", "bootstrap-rs"):
                compiled = teleprompter.compile(program, trainset=trainset, valset=valset)
            else:
                compiled = teleprompter.compile(program, trainset=trainset)
        with meter.step("validation"):
            after = score(compiled, valset, metric, threads)
    compiled.method = program.method
    budgeted = optimizer == "gepa" and bool(max_metric_calls)
    settings = {"name": optimizer, "auto": auto if optimizer in ("mipro", "gepa") and not budgeted else None,
                "max_metric_calls": max_metric_calls if budgeted else None, "max_demos": max_demos, "seed": seed}
    phases = {role: {k: round(v, 1) if k == "seconds" else int(v) for k, v in cost.items()}
              for role, cost in meter.roles.items()}
    return CompileResult(compiled, before, after, time.perf_counter() - started,
                         live_calls(meter.roles.get("optimizer", {})), settings, phases)
