"""`hyporag.fit`: index, split, tune, compile, freeze and evaluate a program for a new domain, stage by stage.

    result = hyporag.fit(FitSettings(method="chr", out="artifacts/my-chr"),
                         RunConfig(dataset="my_dev.csv", corpus="my_corpus.jsonl"))
    result.heldout_accuracy, result.load()

This file is one method's fit read top to bottom: `fit` (the entry, for one method or several candidates), `fit_one`
(its stages in order) and the stages themselves, each a function of one `FitContext` returning the record that
`<out>/fit.json` keeps (hyporag.jobs.fit_plan), so a killed fit re-run skips what is done. Several candidates:
hyporag.jobs.fit_candidates; the reports: hyporag.jobs.fit_report.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyporag.eval.dspy_metrics import objective_metric
from hyporag.eval.run_report import summaries
from hyporag.foundation.atomic import write_json_atomic
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.builders import artifact_config, build_program, build_retriever, fit_to_context
from hyporag.jobs.evaluate import as_roles, run_evaluation, run_record
from hyporag.jobs.fit_candidates import DEFAULT_CANDIDATES, fit_candidates
from hyporag.jobs.fit_plan import Deadline, FitPlan, FitResult, FitState, FitStopped, fit_questions, run_stage
from hyporag.jobs.fit_report import write_fit_report
from hyporag.jobs.optimizing import make_metric_for, reflection_lm, refuse_unreadable_objective, tune_modes
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import FitSettings
from hyporag.jobs.speed import record_calls, record_run_speed
from hyporag.jobs.tracking import metric_name, tracked_job
from hyporag.optimizers.artifact import frozen_config, load_artifact, read_artifact_manifest, save_artifact
from hyporag.optimizers.splits import questions_fingerprint, refuse_test_split, three_way_split
from hyporag.optimizers.study import best_program, open_study, run_study, variant
from hyporag.optimizers.study_identity import check_study_identity, identity_digest, study_identity
from hyporag.optimizers.study_storage import study_location
from hyporag.optimizers.teleprompter import compile_program
from hyporag.programs.config import ProgramConfig
from hyporag.programs.registry import method_entry


def fit(settings: FitSettings, run: RunConfig | None = None, roles=None) -> FitResult:
    """All stages (those finished before are skipped); returns the fit directory and its record. With
    `run.tracking.track`, one MLflow run: held-out accuracy per program, the report, the held-out rows and the
    frozen artifact."""
    run = run or RunConfig()
    if not settings.method and not run.control.program and not settings.methods:
        settings = settings.replace(methods=DEFAULT_CANDIDATES)  # the user does not know which method fits yet
    deadline = Deadline(settings.max_minutes)
    with tracked_job(run, "fit", settings, settings.out) as tracker:
        try:
            result = (fit_candidates(settings, run, roles, fit_one, deadline) if settings.methods
                      else fit_one(settings, run, roles, deadline=deadline))
        except FitStopped as stop:
            return stopped(Path(settings.out), stop)
        if tracker:
            tracker.metrics({metric_name(f"heldout.{m}.accuracy"): a for m, a in result.heldout_accuracy.items()})
            tracker.artifacts(result.out, names=("report.md", "report.json", "fit.json", "accuracy.png"))
            tracker.artifacts(result.out / "heldout", under="heldout")
            tracker.directory(result.artifact, "artifact")
    return result


def stopped(out: Path, stop: FitStopped) -> FitResult:
    """A fit stopped by its time limit: fit.json says why (FitResult.stopped), one line says so, nothing else."""
    path = out / "fit.json"  # on record since the fit began (optimizers.fit.FitState)
    data = {**json.loads(path.read_text(encoding="utf-8")), "stopped": str(stop)}
    write_json_atomic(path, data)
    print(f"fit: stopped: {stop}; re-run the same command to resume (finished stages are kept)", file=sys.stderr,
          flush=True)
    return FitResult(out, data)


def fit_one(settings: FitSettings, run: RunConfig, roles, through: str = "report",
         deadline: Deadline | None = None) -> FitResult:
    """One method's stages; `through="freeze"` stops once its artifact is frozen (a candidate of a larger fit).
    `deadline` is checked before every stage not yet done (FitStopped)."""

    if not run.data.dataset or not settings.out:
        raise HyporagError("fit needs --dataset (your dev set) and --out (the artifact directory to write)")
    method = read_artifact_manifest(run.control.program)["method"] if run.control.program else settings.method
    if not method:
        raise HyporagError("give --method (or --program)")
    if run.control.program:
        run = artifact_config(run)
    roles = as_roles(roles, run)
    uses_retrieval = method_entry(method).program.uses_retrieval
    refuse_test_split(run.data.dataset, settings.allow_test)
    loaded, examples, out = fit_questions(settings, run)
    state = FitState(out, FitPlan.of(settings, run, method, questions_fingerprint(examples)))
    state.data.pop("stopped", None)
    where = f"candidate {method}'s " if through == "freeze" else ""
    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731

    def stage(name: str, work) -> dict:
        fresh = state.done(name) is None
        result = run_stage(state, name, work, log, deadline=deadline, where=where)
        if fresh and name in ("tune", "compile"):  # what this model costs here, for the next fit's estimate
            record_calls(roles, result["lm_calls"], result["seconds"], run.config_for(method).budget)
        return result

    opened: dict = {}
    stage("index", lambda: open_retriever(run, uses_retrieval, opened))
    retriever = opened.get("retriever") or build_retriever(run, uses_retrieval)
    parts = three_way_split(examples, settings.splits, run.data.seed)
    split = stage("split", lambda: {"summary": " / ".join(f"{len(v)} {k}" for k, v in parts.items()),
                                    **{k: [e.id for e in v] for k, v in parts.items()}})
    by_id = {e.id: e for e in examples}
    train, val, heldout = ([by_id[i] for i in split[k]] for k in ("train", "val", "heldout"))
    metric = make_metric_for(settings.metric, roles)
    objective = objective_metric(settings.objective, metric)  # the study's; the teleprompter keeps the plain metric
    # on the index opened above (loading a --program through base_program would open it a second time)
    untuned = (load_artifact(run.control.program, retriever, roles) if run.control.program
               else build_program(method, run, retriever, roles))
    untuned_config = run.config_for(method)  # a --program's frozen config, once artifact_config applied it
    refuse_unreadable_objective(settings.objective, untuned, tune_modes(untuned, settings.modes))
    # the check eval and ask run: a question whose answer prompt cannot fit is refused (or skipped) before any LM
    # call here too, or the frozen program would be refused question by question afterwards
    baseline = run.control.baseline
    checked = {method: untuned, baseline: build_program(baseline, run, retriever, roles)}
    kept, _ = fit_to_context(train + val + heldout, loaded.where, checked, roles, run)
    kept_ids = {e.id for e in kept}
    train, val, heldout = ([e for e in part if e.id in kept_ids] for part in (train, val, heldout))
    fit = FitContext(settings, run, roles, state, out, retriever, untuned, untuned_config, train, val, heldout,
                     metric, objective, log)
    tuned = stage("tune", lambda: tune_numbers(fit))
    compiled = stage("compile", lambda: compile_prompts(fit, tuned))
    stage("freeze", lambda: freeze(fit, tuned, compiled, split))
    if through == "freeze":
        return FitResult(out, state.data)
    stage("evaluate", lambda: evaluate_heldout(fit))
    stage("report", lambda: write_fit_report(out, state))
    return FitResult(out, state.data)


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
    identity = study_identity(fit.untuned.method, fit.settings.objective, fit.settings.metric, fit.val,
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
    optimizer = fit.settings.optimizer
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
        "optimizer": {"name": f"optuna-tpe+{fit.settings.optimizer or 'none'}", "best_params": tuned["best_params"],
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
