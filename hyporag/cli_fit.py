"""`hyporag fit --dataset my_dev.csv --corpus my_corpus.jsonl --method chr --out artifacts/my-chr`: the stages of
`optimizers.fit`, each built from the run's config; a killed fit re-run skips the stages it finished."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hyporag.builders import build_program, build_retriever, build_roles, fit_to_context
from hyporag.errors import HyporagError
from hyporag.run_config import RunConfig


def _plan(args: argparse.Namespace, config: RunConfig, method: str, questions: str):
    from hyporag.optimizers.fit import FitPlan

    try:
        fractions = tuple(float(x) for x in args.splits.split(","))
    except ValueError:
        raise HyporagError(f"--splits {args.splits!r}: give three fractions, e.g. 0.5,0.25,0.25") from None
    return FitPlan(method=method, dataset=config.dataset, out=str(args.out), fractions=fractions,
                   trials=args.trials, optimizer=None if args.skip_prompts else args.optimizer, metric=args.metric,
                   seed=config.seed, max_demos=args.max_demos,
                   program_settings=tuple(sorted((k, json.dumps(v)) for k, v in config.program_settings.items())),
                   questions=questions)


def cmd_fit(args: argparse.Namespace, config: RunConfig) -> int:
    run_fit(args, config, build_roles(config))
    return 0


def run_fit(args: argparse.Namespace, config: RunConfig, roles) -> dict:
    """All stages; returns fit.json's content. `roles` are the LMs (the CLI builds them from the config)."""
    from hyporag.cli_optimize import make_metric_for, reflection_lm, tune_modes
    from hyporag.eval.datasets import load_benchmark
    from hyporag.eval.runner import run_evaluation
    from hyporag.optimizers.artifact import load_artifact, save_artifact
    from hyporag.optimizers.compile import compile_program
    from hyporag.optimizers.fit import FitState, questions_fingerprint, run_stage, three_way_split
    from hyporag.optimizers.splits import refuse_test_split
    from hyporag.optimizers.tune import best_program, open_study, run_study, variant

    if not config.dataset or not args.out:
        raise HyporagError("fit needs --dataset (your dev set) and --out (the artifact directory to write)")
    method = args.method
    if config.program:
        from hyporag.optimizers.artifact import read_artifact_manifest

        method = read_artifact_manifest(config.program)["method"]  # --program implies its method
    if not method:
        raise HyporagError("give --method (or --program)")
    refuse_test_split(config.dataset, args.allow_test)
    loaded = load_benchmark(config.dataset, config.data_dir, skip_bad_rows=config.skip_bad_rows)
    examples = loaded.examples[: config.limit] if config.limit else loaded.examples
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise HyporagError(f"{out}: is a file, not a directory; give --out a directory")
    out.mkdir(parents=True, exist_ok=True)
    state = FitState(out, _plan(args, config, method, questions_fingerprint(examples)))
    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731

    opened: dict = {}

    def index() -> dict:  # builds the index when missing, so its time is this stage's
        opened["retriever"] = build_retriever(config, method != "cot")
        found = opened["retriever"]
        return {"summary": f"{getattr(found, 'mode', 'no')} index", "index_dir": str(getattr(found, "directory", "")),
                "fingerprint": getattr(found, "fingerprint", None)}

    run_stage(state, "index", index, log)
    retriever = opened.get("retriever") or build_retriever(config, method != "cot")
    parts = three_way_split(examples, state.plan.fractions, config.seed)
    split = run_stage(state, "split", lambda: {
        "summary": " / ".join(f"{len(v)} {k}" for k, v in parts.items()),
        **{k: [e.id for e in v] for k, v in parts.items()}}, log)
    by_id = {e.id: e for e in examples}
    train, val, heldout = ([by_id[i] for i in split[k]] for k in ("train", "val", "heldout"))
    metric = make_metric_for(args.metric, roles)
    # on the index opened above (loading a --program through base_program would open it a second time)
    untuned = (load_artifact(config.program, retriever, roles) if config.program
               else build_program(method, config, retriever, roles))
    # the check eval and ask run: a question whose answer prompt cannot fit is refused (or skipped) before any LM
    # call here too, or the frozen program would be refused question by question afterwards
    checked = {method: untuned, "rag": build_program("rag", config, retriever, roles)}
    kept, _ = fit_to_context(train + val + heldout, loaded.where, checked, roles, config)
    kept_ids = {e.id for e in kept}
    train, val, heldout = ([e for e in part if e.id in kept_ids] for part in (train, val, heldout))
    tuned_dir, compiled_dir, final_dir = out / "stages" / "tuned", out / "stages" / "compiled", out / "artifact"

    def tune() -> dict:
        study = open_study("fit", args.storage or str(out / "study.journal"), config.seed, out)
        modes = tune_modes(untuned, args.modes)
        run_study(study, untuned.config, lambda c: variant(untuned, roles, c), val, metric, modes, args.trials,
                  threads=config.threads, log=log, default_mode=getattr(retriever, "mode", None))
        best, program = best_program(study, untuned, roles, modes)
        save_artifact(tuned_dir, program, retriever, roles.specs(), {"optimizer": {"name": "optuna-tpe"}})
        return {"summary": f"best trial {best.number} of {len(study.trials)}: {best.value:.3f}",
                "best_params": best.params, "validation": best.value}

    tuned = run_stage(state, "tune", tune, log)

    def compile_prompts() -> dict:
        start = load_artifact(tuned_dir, retriever, roles)
        if state.plan.optimizer is None:
            save_artifact(compiled_dir, start, retriever, roles.specs(), {"optimizer": {"name": "none"}})
            return {"summary": "skipped (--skip-prompts)", "before": tuned["validation"], "after": tuned["validation"]}
        result = compile_program(start, train, val, state.plan.optimizer, metric, roles, auto=args.auto,
                                 max_demos=args.max_demos, seed=config.seed, threads=config.threads,
                                 max_metric_calls=args.max_metric_calls, reflection_lm=reflection_lm(args, config))
        save_artifact(compiled_dir, result.program, retriever, roles.specs(), {"optimizer": result.settings})
        return {"summary": f"{state.plan.optimizer}: validation {result.before:.3f} -> {result.after:.3f}",
                "before": result.before, "after": result.after, "settings": result.settings}

    compiled = run_stage(state, "compile", compile_prompts, log)

    def freeze() -> dict:
        program = load_artifact(compiled_dir, retriever, roles)
        save_artifact(final_dir, program, retriever, roles.specs(), {
            "optimizer": {"name": f"optuna-tpe+{state.plan.optimizer or 'none'}", "best_params": tuned["best_params"],
                          "teleprompter": compiled.get("settings")},
            "metric": args.metric, "splits": {"dataset": config.dataset, "seed": config.seed,
                                              **{k: len(split[k]) for k in ("train", "val", "heldout")}},
            "validation": {"tuned": tuned["validation"], "compiled": compiled["after"]},
            "cost": {stage: {k: state.done(stage)[k] for k in ("seconds", "lm_calls")} for stage in
                     ("tune", "compile")}})
        return {"summary": f"frozen to {final_dir}", "artifact": str(final_dir)}

    run_stage(state, "freeze", freeze, log)

    def evaluate_heldout() -> dict:
        frozen = load_artifact(final_dir, retriever, roles)
        programs = {"rag": build_program("rag", config, retriever, roles), "untuned": untuned, "tuned": frozen}
        report = run_evaluation(programs, heldout, out / "heldout", {"dataset": config.dataset, "n": len(heldout),
                                "methods": list(programs), "lms": roles.specs(), "fit": str(out)},
                                threads=config.threads)
        accuracy = {s["method"]: s["accuracy"] for s in report["methods"]}
        return {"summary": ", ".join(f"{m} {a:.3f}" for m, a in accuracy.items()) + f" on {len(heldout)} held-out",
                "accuracy": accuracy}

    run_stage(state, "evaluate", evaluate_heldout, log)
    from hyporag.cli_fit_report import write_fit_report

    run_stage(state, "report", lambda: write_fit_report(out, state), log)
    print((out / "report.md").read_text(encoding="utf-8"))
    return state.data
