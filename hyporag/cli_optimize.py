"""`hyporag compile` and `hyporag tune`: prompt optimization and numeric tuning, both ending in a frozen artifact."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hyporag.builders import build_program, build_retriever, lm_build_kwargs, load_frozen, select_examples
from hyporag.errors import ConfigError, HyporagError
from hyporag.run_config import RunConfig


def _splits(args: argparse.Namespace, config: RunConfig) -> tuple[list, list, dict]:
    from hyporag.eval.datasets import load_benchmark
    from hyporag.optimizers.splits import refuse_test_split, split_train_val

    if args.trainset or args.valset:
        if not (args.trainset and args.valset):
            raise HyporagError("--trainset and --valset go together")
        for name in (args.trainset, args.valset):
            refuse_test_split(name, args.allow_test)
        train = load_benchmark(args.trainset, config.data_dir).examples
        val = load_benchmark(args.valset, config.data_dir).examples
        if {e.id for e in train} & {e.id for e in val} and args.trainset == args.valset:
            raise HyporagError("--trainset and --valset are the same set: give disjoint splits")
        return train, val, {"train": args.trainset, "val": args.valset, "train_size": len(train),
                            "val_size": len(val)}
    dataset = config.dataset or "medqa-dev"
    refuse_test_split(dataset, args.allow_test)
    examples = select_examples(load_benchmark(dataset, config.data_dir).examples, config.limit, config.seed)
    train, val = split_train_val(examples, args.val_fraction, config.seed)
    return train, val, {"dataset": dataset, "val_fraction": args.val_fraction, "seed": config.seed,
                        "limit": config.limit, "train_size": len(train), "val_size": len(val)}


def make_metric_for(name: str, roles):
    from hyporag.eval.metric_fns import make_metric
    from hyporag.programs.judge import ContextJudge

    return make_metric(name, ContextJudge(roles.judge) if name != "accuracy" else None)


def base_program(method: str | None, config: RunConfig, roles):
    """The program to optimize: a frozen artifact (--program, which implies its method) or a fresh `method`."""
    if config.program:
        return load_frozen(config, roles)
    if not method:
        raise HyporagError("give --method (or --program, a frozen artifact to start from)")
    return build_program(method, config, build_retriever(config, method != "cot"), roles)


def reflection_lm(args: argparse.Namespace, config: RunConfig):
    if not args.reflection_lm:
        return None
    from hyporag.programs.lm import build_lm

    # a new instruction is free text, longer than any field the task LMs write
    return build_lm(args.reflection_lm, **{**lm_build_kwargs(config), "max_tokens": max(config.max_tokens, 1024)})


def cmd_compile(args: argparse.Namespace, config: RunConfig) -> int:
    from hyporag.builders import build_roles
    from hyporag.optimizers.artifact import save_artifact
    from hyporag.optimizers.compile import compile_program

    roles = build_roles(config)
    train, val, split = _splits(args, config)
    program = base_program(args.method, config, roles)
    metric = make_metric_for(args.metric, roles)
    print(f"compile {program.method} with {args.optimizer} on {split['train_size']} train / {split['val_size']} val "
          f"questions, metric {args.metric}", file=sys.stderr)
    result = compile_program(program, train, val, args.optimizer, metric, roles, auto=args.auto,
                             max_demos=args.max_demos, seed=config.seed, threads=config.threads,
                             max_metric_calls=args.max_metric_calls, reflection_lm=reflection_lm(args, config))
    if args.optimizer in ("gepa", "mipro"):
        result.settings["reflection_lm"] = args.reflection_lm or roles.hypothesis.spec
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


def tune_modes(program, requested: str | None) -> list[str]:
    """The retriever modes a study may pick: those the index holds, narrowed by --modes."""
    available = [m for m in ("bm25", "dense", "hybrid") if mode_available(program.retriever, m)]
    modes = [m for m in (requested.split(",") if requested else available) if m in available]
    if not modes:
        raise HyporagError(f"none of the requested retriever modes are in the index (it has {', '.join(available)})")
    return modes


def cmd_tune(args: argparse.Namespace, config: RunConfig) -> int:
    from hyporag.builders import build_roles
    from hyporag.optimizers.artifact import save_artifact
    from hyporag.optimizers.tune import best_program, open_study, run_study, study_report, variant
    from hyporag.programs.cost import CostMeter

    roles = build_roles(config)
    study = open_study(args.study, args.storage, config.seed, Path("runs") / "studies", heartbeat=args.heartbeat)
    if args.report:
        for row in study_report(study, Path("runs") / "studies"):
            print(f"trial {row['trial']:>3}  {row['value']:.3f}  {row['params']}")
        print(f"plots: runs/studies/{args.study}-history.png, runs/studies/{args.study}-importance.png")
        return 0
    _, val, split = _splits(args, config)
    metric = make_metric_for(args.metric, roles)
    probe = base_program(args.method, config, roles)
    modes = tune_modes(probe, args.modes)
    study.set_user_attr("method", probe.method)
    meter = CostMeter()
    with meter.step("tune"):
        failed = run_study(study, probe.config, lambda c: variant(probe, roles, c), val, metric, modes, args.trials,
                           threads=config.threads, log=lambda m: print(m, file=sys.stderr),
                           default_mode=getattr(probe.retriever, "mode", None))
    cost = meter.roles["tune"]
    if failed:
        print(f"{failed} trial(s) failed with every question erroring (their first error is shown above)",
              file=sys.stderr)
    best, program = best_program(study, probe, roles, modes)
    print(f"best trial {best.number}: {args.metric} {best.value:.3f} with {best.params}; this run "
          f"{cost['seconds']:.0f} s, {int(cost['calls'])} LM calls (cache hits not counted)")
    if args.out:
        save_artifact(args.out, program, program.retriever, roles.specs(), {
            "optimizer": {"name": "optuna-tpe", "study": args.study, "trials": len(study.trials), "seed": config.seed,
                          "best_params": best.params},
            "metric": args.metric, "splits": split, "validation": {"after": best.value},
            "cost": {"seconds": round(cost["seconds"], 1), "lm_calls": int(cost["calls"])}})
        print(f"frozen best trial to {args.out}")
    return 0


def mode_available(retriever, mode: str) -> bool:
    try:
        retriever._check(mode)
    except ConfigError:
        return False
    return True
