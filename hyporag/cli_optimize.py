"""`hyporag compile` and `hyporag tune`: prompt optimization and numeric tuning, both ending in a frozen artifact."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hyporag.cli_common import (
    frozen_from_args,
    lm_build_kwargs,
    program_from_args,
    retriever_from_args,
    roles_from_args,
    select_examples,
)
from hyporag.errors import ConfigError, HyporagError


def _splits(args: argparse.Namespace) -> tuple[list, list, dict]:
    from hyporag.eval.datasets import load_benchmark
    from hyporag.optimizers.splits import refuse_test_split, split_train_val

    if args.trainset or args.valset:
        if not (args.trainset and args.valset):
            raise HyporagError("--trainset and --valset go together")
        for name in (args.trainset, args.valset):
            refuse_test_split(name, args.allow_test)
        train = load_benchmark(args.trainset, args.data_dir).examples
        val = load_benchmark(args.valset, args.data_dir).examples
        if {e.id for e in train} & {e.id for e in val} and args.trainset == args.valset:
            raise HyporagError("--trainset and --valset are the same set: give disjoint splits")
        return train, val, {"train": args.trainset, "val": args.valset, "train_size": len(train),
                            "val_size": len(val)}
    refuse_test_split(args.dataset, args.allow_test)
    examples = select_examples(load_benchmark(args.dataset, args.data_dir).examples, args.limit, args.seed)
    train, val = split_train_val(examples, args.val_fraction, args.seed)
    return train, val, {"dataset": args.dataset, "val_fraction": args.val_fraction, "seed": args.seed,
                        "limit": args.limit, "train_size": len(train), "val_size": len(val)}


def _metric(args: argparse.Namespace, roles):
    from hyporag.eval.metric_fns import make_metric
    from hyporag.programs.judge import ContextJudge

    return make_metric(args.metric, ContextJudge(roles.judge) if args.metric != "accuracy" else None)


def _base_program(args: argparse.Namespace, roles):
    """The program to optimize: a frozen artifact (--program) or a fresh one for --method."""
    if args.program:
        return frozen_from_args(args, roles)
    return program_from_args(args.method, args, retriever_from_args(args, args.method != "cot"), roles)


def _variant(base, roles, overrides: dict):
    """`base` with some constructor settings replaced, keeping its tuned prompts and demos (one per Optuna trial)."""
    from hyporag.optimizers.artifact import constructor_kwargs
    from hyporag.programs import make_program

    program = make_program(base.method, retriever=base.retriever, roles=roles,
                           **{**constructor_kwargs(base.settings()), **overrides})
    program.load_state(base.dump_state())
    return program


def cmd_compile(args: argparse.Namespace) -> int:
    from hyporag.optimizers.artifact import save_artifact
    from hyporag.optimizers.compile import compile_program

    roles = roles_from_args(args)
    train, val, split = _splits(args)
    program = _base_program(args, roles)
    metric = _metric(args, roles)
    print(f"compile {program.method} with {args.optimizer} on {split['train_size']} train / {split['val_size']} val "
          f"questions, metric {args.metric}", file=sys.stderr)
    reflection_spec = args.reflection_lm or roles.hypothesis.spec
    reflection = None
    if args.reflection_lm:
        from hyporag.programs.lm import build_lm

        # a new instruction is free text, longer than any field the task LMs write
        reflection = build_lm(args.reflection_lm, **{**lm_build_kwargs(args), "max_tokens": max(args.max_tokens, 1024)})
    result = compile_program(program, train, val, args.optimizer, metric, roles, auto=args.auto,
                             max_demos=args.max_demos, seed=args.seed, threads=args.threads,
                             max_metric_calls=args.max_metric_calls, reflection_lm=reflection)
    if args.optimizer in ("gepa", "mipro"):
        result.settings["reflection_lm"] = reflection_spec
    out = Path(args.out or Path("artifacts") / f"{program.method}-{args.optimizer}")
    save_artifact(out, result.program, program.retriever, roles.specs(), {
        "optimizer": result.settings, "metric": args.metric, "splits": split,
        "validation": {"before": result.before, "after": result.after},
        "cost": {"seconds": round(result.seconds, 1), "lm_calls": result.calls, "by_phase": result.cost_by_phase}})
    optimizer_cost = result.cost_by_phase.get("optimizer", {})
    print(f"validation {args.metric}: {result.before:.3f} -> {result.after:.3f}; optimizer "
          f"{optimizer_cost.get('seconds', 0):.0f} s, {result.calls} LM calls; total {result.seconds:.0f} s; "
          f"frozen to {out}")
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from hyporag.optimizers.artifact import save_artifact
    from hyporag.optimizers.tune import (
        baseline_params,
        best_trial,
        open_study,
        run_study,
        study_report,
        suggest,
    )
    from hyporag.programs.cost import CostMeter

    roles = roles_from_args(args)
    study = open_study(args.study, args.storage, args.seed, Path("runs") / "studies", heartbeat=args.heartbeat)
    if args.report:
        for row in study_report(study, Path("runs") / "studies"):
            print(f"trial {row['trial']:>3}  {row['value']:.3f}  {row['params']}")
        print(f"plots: runs/studies/{args.study}-history.png, runs/studies/{args.study}-importance.png")
        return 0
    _, val, split = _splits(args)
    metric = _metric(args, roles)
    probe = _base_program(args, roles)
    available = [m for m in ("bm25", "dense", "hybrid") if _mode_available(probe.retriever, m)]
    modes = [m for m in (args.modes.split(",") if args.modes else available) if m in available]
    if not modes:
        raise HyporagError(f"none of the requested retriever modes are in the index (it has {', '.join(available)})")
    study.set_user_attr("method", args.method)
    meter = CostMeter()
    with meter.step("tune"):
        failed = run_study(study, lambda kwargs: _variant(probe, roles, kwargs), val, metric, probe.method, modes,
                           probe.budget, args.trials, threads=args.threads, log=lambda m: print(m, file=sys.stderr),
                           baseline=baseline_params(probe.settings(), probe.retriever.mode, modes))
    cost = meter.roles["tune"]
    if failed:
        print(f"{failed} trial(s) failed with every question erroring (their first error is shown above)",
              file=sys.stderr)
    best = best_trial(study)
    print(f"best trial {best.number}: {args.metric} {best.value:.3f} with {best.params}; this run "
          f"{cost['seconds']:.0f} s, {int(cost['calls'])} LM calls (cache hits not counted)")
    if args.out:
        import optuna

        program = _variant(probe, roles, suggest(optuna.trial.FixedTrial(best.params), probe.method, modes,
                                                 probe.budget))
        save_artifact(args.out, program, program.retriever, roles.specs(), {
            "optimizer": {"name": "optuna-tpe", "study": args.study, "trials": len(study.trials), "seed": args.seed,
                          "best_params": best.params},
            "metric": args.metric, "splits": split, "validation": {"after": best.value},
            "cost": {"seconds": round(cost["seconds"], 1), "lm_calls": int(cost["calls"])}})
        print(f"frozen best trial to {args.out}")
    return 0


def _mode_available(retriever, mode: str) -> bool:
    try:
        retriever._check(mode)
    except ConfigError:
        return False
    return True
