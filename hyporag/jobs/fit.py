"""`hyporag.fit`: index, split, tune, compile, freeze and evaluate a program for a new domain, stage by stage.

    result = hyporag.fit(FitSettings(method="chr", out="artifacts/my-chr"),
                         RunConfig(dataset="my_dev.csv", corpus="my_corpus.jsonl"))
    result.heldout_accuracy, result.load()

Each finished stage is recorded in `<out>/fit.json` (optimizers.fit), so a killed fit re-run skips what is done.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hyporag.eval.dspy_metrics import objective_metric
from hyporag.foundation.atomic import write_json_atomic
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.builders import artifact_config, build_program, build_retriever, fit_to_context
from hyporag.jobs.evaluate import as_roles
from hyporag.jobs.fit_candidates import DEFAULT_CANDIDATES, fit_candidates
from hyporag.jobs.fit_common import fit_plan, fit_questions
from hyporag.jobs.fit_report import write_fit_report
from hyporag.jobs.fit_result import FitResult
from hyporag.jobs.fit_stages import (
    FitContext,
    compile_prompts,
    evaluate_heldout,
    freeze,
    open_retriever,
    tune_numbers,
)
from hyporag.jobs.optimizing import make_metric_for
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import FitSettings
from hyporag.jobs.speed import record_calls
from hyporag.jobs.tracking import metric_name, tracked_job
from hyporag.optimizers.artifact import load_artifact, read_artifact_manifest
from hyporag.optimizers.fit import Deadline, FitState, FitStopped, questions_fingerprint, run_stage, three_way_split
from hyporag.optimizers.splits import refuse_test_split
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
            result = (fit_candidates(settings, run, roles, _fit, deadline) if settings.methods
                      else _fit(settings, run, roles, deadline=deadline))
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


def _fit(settings: FitSettings, run: RunConfig, roles, through: str = "report",
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
    state = FitState(out, fit_plan(settings, run, method, questions_fingerprint(examples)))
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
    parts = three_way_split(examples, state.plan.fractions, run.data.seed)
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
