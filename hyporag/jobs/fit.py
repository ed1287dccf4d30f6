"""`hyporag.fit`: index, split, tune, compile, freeze and evaluate a program for a new domain, stage by stage.

    result = hyporag.fit(FitSettings(method="chr", out="artifacts/my-chr"),
                         RunConfig(dataset="my_dev.csv", corpus="my_corpus.jsonl"))
    result.heldout_accuracy, result.load()

Each finished stage is recorded in `<out>/fit.json` (optimizers.fit), so a killed fit re-run skips what is done.
"""

from __future__ import annotations

import sys

from hyporag.eval.dspy_metrics import objective_metric
from hyporag.eval.evaluate import run_evaluation
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.builders import artifact_config, build_program, build_retriever, fit_to_context
from hyporag.jobs.evaluate import as_roles, run_record
from hyporag.jobs.fit_candidates import DEFAULT_CANDIDATES, fit_candidates
from hyporag.jobs.fit_common import fit_plan, fit_questions
from hyporag.jobs.fit_report import write_fit_report
from hyporag.jobs.fit_result import FitResult
from hyporag.jobs.optimizing import make_metric_for, reflection_lm, tune_modes
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import FitSettings
from hyporag.jobs.tracking import metric_name, tracked_job
from hyporag.optimizers.artifact import frozen_config, load_artifact, read_artifact_manifest, save_artifact
from hyporag.optimizers.compile import compile_program
from hyporag.optimizers.fit import FitState, questions_fingerprint, run_stage, three_way_split
from hyporag.optimizers.splits import refuse_test_split
from hyporag.optimizers.tune import best_program, open_study, run_study, variant
from hyporag.programs.registry import method_entry


def fit(settings: FitSettings, run: RunConfig | None = None, roles=None) -> FitResult:
    """All stages (those finished before are skipped); returns the fit directory and its record. With
    `run.tracking.track`, one MLflow run: held-out accuracy per program, the report, the held-out rows and the
    frozen artifact."""
    run = run or RunConfig()
    if not settings.method and not run.control.program and not settings.methods:
        settings = settings.replace(methods=DEFAULT_CANDIDATES)  # the user does not know which method fits yet
    with tracked_job(run, "fit", settings, settings.out) as tracker:
        result = fit_candidates(settings, run, roles, _fit) if settings.methods else _fit(settings, run, roles)
        if tracker:
            tracker.metrics({metric_name(f"heldout.{m}.accuracy"): a for m, a in result.heldout_accuracy.items()})
            tracker.artifacts(result.out, names=("report.md", "report.json", "fit.json", "accuracy.png"))
            tracker.artifacts(result.out / "heldout", under="heldout")
            tracker.directory(result.artifact, "artifact")
    return result


def _fit(settings: FitSettings, run: RunConfig, roles, through: str = "report") -> FitResult:
    """One method's stages; `through="freeze"` stops once its artifact is frozen (a candidate of a larger fit)."""

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
    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731

    opened: dict = {}

    def index() -> dict:  # builds the index when missing, so its time is this stage's
        opened["retriever"] = build_retriever(run, uses_retrieval)
        found = opened["retriever"]
        return {"summary": f"{getattr(found, 'mode', 'no')} index", "index_dir": str(getattr(found, "directory", "")),
                "fingerprint": getattr(found, "fingerprint", None)}

    run_stage(state, "index", index, log)
    retriever = opened.get("retriever") or build_retriever(run, uses_retrieval)
    parts = three_way_split(examples, state.plan.fractions, run.data.seed)
    split = run_stage(state, "split", lambda: {
        "summary": " / ".join(f"{len(v)} {k}" for k, v in parts.items()),
        **{k: [e.id for e in v] for k, v in parts.items()}}, log)
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
    checked = {method: untuned, "rag": build_program("rag", run, retriever, roles)}
    kept, _ = fit_to_context(train + val + heldout, loaded.where, checked, roles, run)
    kept_ids = {e.id for e in kept}
    train, val, heldout = ([e for e in part if e.id in kept_ids] for part in (train, val, heldout))
    tuned_dir, compiled_dir, final_dir = out / "stages" / "tuned", out / "stages" / "compiled", out / "artifact"

    def tune() -> dict:
        study = open_study("fit", settings.storage or str(out / "study.journal"), run.data.seed, out)
        modes = tune_modes(untuned, settings.modes)
        run_study(study, untuned_config, lambda c: variant(untuned, roles, c), val, objective, modes, settings.trials,
                  threads=run.control.threads, log=log, default_mode=getattr(retriever, "mode", None))
        best, program = best_program(study, untuned, roles, modes)
        save_artifact(tuned_dir, program, retriever, roles.specs(), {"optimizer": {"name": "optuna-tpe"}})
        finished = sum(t.state.name == "COMPLETE" for t in study.trials)
        return {"summary": f"best: trial #{best.number} ({finished} finished trials, {len(study.trials)} started in "
                           f"all): {best.value:.3f}",
                "best_params": best.params, "validation": best.value}

    tuned = run_stage(state, "tune", tune, log)

    def compile_prompts() -> dict:
        start = load_artifact(tuned_dir, retriever, roles)
        if state.plan.optimizer is None:
            save_artifact(compiled_dir, start, retriever, roles.specs(), {"optimizer": {"name": "none"}})
            return {"summary": "skipped (no prompt optimizer)", "before": tuned["validation"],
                    "after": tuned["validation"]}
        result = compile_program(start, train, val, state.plan.optimizer, metric, roles, auto=settings.auto,
                                 max_demos=settings.max_demos, seed=run.data.seed, threads=run.control.threads,
                                 max_metric_calls=settings.max_metric_calls,
                                 reflection_lm=reflection_lm(settings.reflection_lm, run))
        save_artifact(compiled_dir, result.program, retriever, roles.specs(), {"optimizer": result.settings})
        return {"summary": f"{state.plan.optimizer}: validation {result.before:.3f} -> {result.after:.3f}",
                "before": result.before, "after": result.after, "settings": result.settings}

    compiled = run_stage(state, "compile", compile_prompts, log)

    def freeze() -> dict:
        program = load_artifact(compiled_dir, retriever, roles)
        save_artifact(final_dir, program, retriever, roles.specs(), {
            "optimizer": {"name": f"optuna-tpe+{state.plan.optimizer or 'none'}", "best_params": tuned["best_params"],
                          "teleprompter": compiled.get("settings")},
            "metric": settings.metric, "objective": settings.objective,
            "splits": {"dataset": run.data.dataset, "seed": run.data.seed,
                                                  **{k: len(split[k]) for k in ("train", "val", "heldout")}},
            "validation": {"tuned": tuned["validation"], "compiled": compiled["after"]},
            "cost": {stage: {k: state.done(stage)[k] for k in ("seconds", "lm_calls")} for stage in
                     ("tune", "compile")}})
        return {"summary": f"frozen to {final_dir}", "artifact": str(final_dir)}

    run_stage(state, "freeze", freeze, log)
    if through == "freeze":
        return FitResult(out, state.data)

    def evaluate_heldout() -> dict:
        frozen = load_artifact(final_dir, retriever, roles)
        programs = {"rag": build_program("rag", run, retriever, roles), "untuned": untuned, "tuned": frozen}
        configs = {"rag": run.config_for("rag"), "untuned": untuned_config, "tuned": frozen_config(final_dir)}
        # what `hyporag view`, `report` and a resume read: the index (for passage text) and the programs' settings
        recorded = {"dataset": run.data.dataset, "n": len(heldout), "seed": run.data.seed,
                    **run_record(programs, roles, retriever, configs), "fit": str(out)}
        report = run_evaluation(programs, heldout, out / "heldout", recorded, threads=run.control.threads)
        accuracy = {s["method"]: s["accuracy"] for s in report["methods"]}
        return {"summary": ", ".join(f"{m} {a:.3f}" for m, a in accuracy.items()) + f" on {len(heldout)} held-out",
                "accuracy": accuracy}

    run_stage(state, "evaluate", evaluate_heldout, log)
    run_stage(state, "report", lambda: write_fit_report(out, state), log)
    return FitResult(out, state.data)
