"""`hyporag.tune`: the numbers (λ and its schedule, k, merge, retriever mode) by a resumable Optuna study."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hyporag.eval.dspy_metrics import objective_metric
from hyporag.jobs.builders import artifact_config
from hyporag.jobs.evaluate import as_roles
from hyporag.jobs.optimizing import (
    base_program,
    make_metric_for,
    optimizer_splits,
    refuse_unreadable_objective,
    tune_modes,
)
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import TuneSettings
from hyporag.jobs.tracking import flat_params, tracked_job
from hyporag.lm.cost import CostMeter, live_calls
from hyporag.optimizers.artifact import save_artifact
from hyporag.optimizers.study import best_program, open_study, run_study, study_report, variant
from hyporag.optimizers.study_identity import check_study_identity, study_identity
from hyporag.optimizers.study_storage import study_location

STUDIES = Path("runs") / "studies"


@dataclass
class TuneResult:
    """The best trial, the tuned program (a dspy.Module), and the artifact it was frozen to (when `out` is set)."""

    best_value: float
    best_params: dict[str, Any]
    best_trial: int
    trials: int
    failed: int
    seconds: float
    lm_calls: int
    program: Any
    artifact: Path | None
    history: list[dict[str, Any]] = field(default_factory=list)  # every trial: number, params, value, state, accuracy


def tune(settings: TuneSettings, run: RunConfig | None = None, roles=None, program=None,
         examples: Sequence | None = None) -> TuneResult:
    """Run (or resume) the study on the validation split; several workers may share one `storage`. With
    `run.tracking.track`, one MLflow run with each trial a child run."""
    run = run or RunConfig()
    with tracked_job(run, "tune", settings, settings.out, beside=True) as tracker:
        result = _tune(settings, run, roles, program, examples)
        if tracker:
            for trial in result.history:
                tracker.child(f"trial {trial['number']}", flat_params("", trial["params"]),
                              {"value": trial["value"]} if trial["value"] is not None else {})
            tracker.metrics({"best_value": result.best_value, "best_trial": result.best_trial,
                             "trials": result.trials, "failed_trials": result.failed, "seconds": result.seconds,
                             "lm_calls": result.lm_calls})
            if result.artifact:
                tracker.directory(result.artifact, "artifact")
    return result


def _tune(settings: TuneSettings, run: RunConfig, roles, program, examples) -> TuneResult:
    if run.control.program:  # a frozen start point brings its own settings (protocol included) for the LMs too
        run = artifact_config(run)
    roles = as_roles(roles, run)
    _, val, split = optimizer_splits(settings, run, examples)
    metric = objective_metric(settings.objective, make_metric_for(settings.metric, roles))
    probe = base_program(settings.method, run, roles, program)
    modes = tune_modes(probe, settings.modes)
    refuse_unreadable_objective(settings.objective, probe, modes)  # before the study exists: nothing left behind
    study = open_study(settings.study, settings.storage, run.data.seed, STUDIES, heartbeat=settings.heartbeat)
    check_study_identity(study, study_identity(probe.method, settings.objective, settings.metric, val,
                                               probe.config.to_dict(), modes, roles.specs()),
                         study_location(study, settings.storage))
    meter = CostMeter()
    with meter.step("tune"):
        failed = run_study(study, probe.config, lambda c: variant(probe, roles, c), val, metric, modes,
                           settings.trials, threads=run.control.threads, log=lambda m: print(m, file=sys.stderr),
                           default_mode=getattr(probe.retriever, "mode", None), progress=True)
    cost = meter.roles["tune"]
    best, tuned = best_program(study, probe, roles, modes)
    if settings.out:
        save_artifact(settings.out, tuned, tuned.retriever, roles.specs(), {
            "optimizer": {"name": "optuna-tpe", "study": settings.study, "trials": len(study.trials),
                          "seed": run.data.seed, "best_params": best.params},
            "metric": settings.metric, "objective": settings.objective, "splits": split,
            "validation": {"after": best.value},
            "cost": {"seconds": round(cost["seconds"], 1), "lm_calls": live_calls(cost)}})
    return TuneResult(best.value, best.params, best.number, len(study.trials), failed, cost["seconds"],
                      live_calls(cost), tuned, Path(settings.out) if settings.out else None,
                      [{"number": t.number, "params": t.params, "value": t.value, "state": t.state.name,
                        "accuracy": t.user_attrs.get("accuracy")} for t in study.trials])


def study_summary(settings: TuneSettings, run: RunConfig | None = None) -> list[dict[str, Any]]:
    """The study's best trials (and its history/importance PNGs under runs/studies/), without running any."""

    run = run or RunConfig()
    study = open_study(settings.study, settings.storage, run.data.seed, STUDIES, heartbeat=settings.heartbeat,
                       create=False)
    return study_report(study, STUDIES)
