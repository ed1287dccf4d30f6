"""One method's fit stages as named functions over one `FitContext`: open the index, tune the numbers (Optuna),
compile the prompts (a teleprompter), freeze the artifact, evaluate on held-out. Each returns the record `run_stage`
stores in fit.json, so a killed fit re-run skips what is done (hyporag.jobs.fit runs them in order)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyporag.eval.report import summaries
from hyporag.jobs.builders import build_program, build_retriever
from hyporag.jobs.evaluate import run_evaluation, run_record
from hyporag.jobs.optimizing import reflection_lm, tune_modes
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import FitSettings
from hyporag.jobs.speed import record_run_speed
from hyporag.optimizers.artifact import frozen_config, load_artifact, save_artifact
from hyporag.optimizers.compile import compile_program
from hyporag.optimizers.fit import FitState
from hyporag.optimizers.study_identity import check_study_identity, identity_digest, study_identity
from hyporag.optimizers.study_storage import study_location
from hyporag.optimizers.tune import best_program, open_study, run_study, variant
from hyporag.programs.config import ProgramConfig


@dataclass
class FitContext:
    """What every stage of one method's fit reads: its settings, the split, the untuned program and its typed
    config, the metric, where each stage writes."""

    settings: FitSettings
    run: RunConfig
    roles: Any
    state: FitState
    out: Path
    retriever: Any
    untuned: Any  # the program tuning starts from (a --program's frozen one, or the method's preset)
    untuned_config: ProgramConfig
    train: list
    val: list
    heldout: list
    metric: Callable
    objective: Callable  # the study's; the teleprompter keeps the plain metric
    log: Callable[[str], None]

    @property
    def tuned_dir(self) -> Path:
        return self.out / "stages" / "tuned"

    @property
    def compiled_dir(self) -> Path:
        return self.out / "stages" / "compiled"

    @property
    def final_dir(self) -> Path:
        return self.out / "artifact"


def open_retriever(run: RunConfig, needed: bool, opened: dict) -> dict:
    """The index stage: builds the index when missing, so its time is this stage's; the retriever goes in
    `opened` for the stages after it."""
    found = opened["retriever"] = build_retriever(run, needed)
    return {"summary": f"{getattr(found, 'mode', 'no')} index", "index_dir": str(getattr(found, "directory", "")),
            "fingerprint": getattr(found, "fingerprint", None)}


def tune_numbers(fit: FitContext) -> dict:
    """The Optuna study on validation: trial 0 the untuned program, the best trial saved as the tuned stage."""
    settings, run = fit.settings, fit.run
    modes = tune_modes(fit.untuned, settings.modes)
    identity = study_identity(fit.untuned.method, fit.state.plan.objective, fit.state.plan.metric, fit.val,
                              fit.untuned_config.to_dict(), modes, fit.roles.specs())
    # in the fit's own journal the study is "fit"; in a shared database it is named by what its values mean, so
    # each fit and candidate has its own and a re-run of the same fit resumes it
    name = f"fit-{fit.untuned.method}-{identity_digest(identity)}" if settings.storage else "fit"
    study = open_study(name, settings.storage or str(fit.out / "study.journal"), run.data.seed, fit.out)
    check_study_identity(study, identity, study_location(study, settings.storage), remedy="give the fit another --out")
    run_study(study, fit.untuned_config, lambda c: variant(fit.untuned, fit.roles, c), fit.val, fit.objective, modes,
              settings.trials, threads=run.control.threads, log=fit.log,
              default_mode=getattr(fit.retriever, "mode", None), progress=True)
    best, program = best_program(study, fit.untuned, fit.roles, modes)
    save_artifact(fit.tuned_dir, program, fit.retriever, fit.roles.specs(), {"optimizer": {"name": "optuna-tpe"}})
    finished = sum(t.state.name == "COMPLETE" for t in study.trials)
    return {"summary": f"best: trial #{best.number} ({finished} finished trials, {len(study.trials)} started in "
                       f"all): {best.value:.3f}",
            "best_params": best.params, "validation": best.value}


def compile_prompts(fit: FitContext, tuned: dict) -> dict:
    """The teleprompter over the tuned program (or a copy of it when the fit asks for none). Its prompts are kept
    only when they score higher on validation than the tuned program; a tie or a loss keeps the tuned one, whose
    prompts are shorter (on 16 questions, bootstrap's demos lowered validation for 3 of 4 candidates)."""
    settings, run = fit.settings, fit.run
    start = load_artifact(fit.tuned_dir, fit.retriever, fit.roles)
    optimizer = fit.state.plan.optimizer
    if optimizer is None:
        save_artifact(fit.compiled_dir, start, fit.retriever, fit.roles.specs(), {"optimizer": {"name": "none"}})
        return {"summary": "skipped (no prompt optimizer)", "before": tuned["validation"], "after": tuned["validation"]}
    result = compile_program(start, fit.train, fit.val, optimizer, fit.metric, fit.roles, auto=settings.auto,
                             max_demos=settings.max_demos, seed=run.data.seed, threads=run.control.threads,
                             max_metric_calls=settings.max_metric_calls,
                             reflection_lm=reflection_lm(settings.reflection_lm, run))
    better = result.after > result.before
    kept = result.program if better else start
    save_artifact(fit.compiled_dir, kept, fit.retriever, fit.roles.specs(), {"optimizer": result.settings})
    return {"summary": f"{optimizer}: validation {result.before:.3f} -> {result.after:.3f}"
                       + ("" if better else "; kept the tuned program (the new prompts did not score higher)"),
            "before": result.before, "after": result.after if better else result.before,
            "compiled_after": result.after, "kept": "compiled" if better else "tuned", "settings": result.settings}


def freeze(fit: FitContext, tuned: dict, compiled: dict, split: dict) -> dict:
    """The compiled program frozen with the evidence: optimizer, objective, splits, validation and cost."""
    program = load_artifact(fit.compiled_dir, fit.retriever, fit.roles)
    save_artifact(fit.final_dir, program, fit.retriever, fit.roles.specs(), {
        "optimizer": {"name": f"optuna-tpe+{fit.state.plan.optimizer or 'none'}", "best_params": tuned["best_params"],
                      "teleprompter": compiled.get("settings"), "prompts_kept": compiled.get("kept", "compiled")},
        "metric": fit.settings.metric, "objective": fit.settings.objective,
        "splits": {"dataset": fit.run.data.dataset, "seed": fit.run.data.seed,
                   **{k: len(split[k]) for k in ("train", "val", "heldout")}},
        "validation": {"tuned": tuned["validation"], "compiled": compiled["after"]},
        "cost": {stage: {k: fit.state.done(stage)[k] for k in ("seconds", "lm_calls")} for stage in
                 ("tune", "compile")}})
    return {"summary": f"frozen to {fit.final_dir}", "artifact": str(fit.final_dir)}


def evaluate_heldout(fit: FitContext) -> dict:
    """The baseline (rag unless the run says otherwise), the untuned and the tuned program on the held-out
    questions, recorded as any evaluation is."""
    run, retriever, roles = fit.run, fit.retriever, fit.roles
    baseline = run.control.baseline
    programs = {baseline: build_program(baseline, run, retriever, roles), "untuned": fit.untuned,
                "tuned": load_artifact(fit.final_dir, retriever, roles)}
    configs = {baseline: run.config_for(baseline), "untuned": fit.untuned_config,
               "tuned": frozen_config(fit.final_dir)}
    # what `hyporag view`, `report` and a resume read: the index (for passage text) and the programs' settings
    recorded = {"dataset": run.data.dataset, "n": len(fit.heldout), "seed": run.data.seed,
                **run_record(programs, roles, retriever, configs), "baseline": baseline, "fit": str(fit.out)}
    report = run_evaluation(programs, fit.heldout, fit.out / "heldout", recorded, threads=run.control.threads)
    record_run_speed(roles, report, recorded)  # the next fit's estimate learns from this one
    accuracy = {s.method: s.accuracy for s in summaries(report)}
    return {"summary": ", ".join(f"{m} {a:.3f}" for m, a in accuracy.items()) + f" on {len(fit.heldout)} held-out",
            "accuracy": accuracy}
