"""What `compile`, `tune` and `fit` share: the questions an optimizer sees, the metric, the program to start from."""

from __future__ import annotations

from collections.abc import Sequence

from hyporag.eval.dspy_metrics import make_metric
from hyporag.foundation.errors import ConfigError, HyporagError
from hyporag.jobs.builders import build_program, build_retriever, lm_build_kwargs, load_frozen, select_examples
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import SplitSettings
from hyporag.lm.client import build_lm
from hyporag.optimizers.splits import refuse_test_split, split_train_val
from hyporag.programs.judge import ContextJudge
from hyporag.programs.registry import method_entry
from hyporag.questions.datasets import load_benchmark
from hyporag.questions.records import examples_from_python


def optimizer_splits(settings: SplitSettings, run: RunConfig, examples: Sequence | None = None):
    """(train, validation, a record of the split): explicit sets, or a seeded split of the run's dataset (or of
    `examples`); a test split is refused unless `allow_test`."""

    if settings.trainset:
        for name in (settings.trainset, settings.valset):
            refuse_test_split(name, settings.allow_test)
        train = load_benchmark(settings.trainset, run.data.data_dir).examples
        val = load_benchmark(settings.valset, run.data.data_dir).examples
        if settings.trainset == settings.valset:
            raise HyporagError("--trainset and --valset are the same set: give disjoint splits")
        return train, val, {"train": settings.trainset, "val": settings.valset, "train_size": len(train),
                            "val_size": len(val)}
    if examples is None:
        dataset = run.data.dataset or "medqa-dev"
        refuse_test_split(dataset, settings.allow_test)
        examples = load_benchmark(dataset, run.data.data_dir).examples
    else:
        dataset = run.data.dataset or "examples"
        examples = examples_from_python(examples).examples  # checked as a file's rows are
    chosen = select_examples(list(examples), run.data.limit, run.data.seed)
    train, val = split_train_val(chosen, settings.val_fraction, run.data.seed)
    return train, val, {"dataset": dataset, "val_fraction": settings.val_fraction, "seed": run.data.seed,
                        "limit": run.data.limit, "train_size": len(train), "val_size": len(val)}


def make_metric_for(name: str, roles):
    return make_metric(name, ContextJudge(roles.judge) if name != "accuracy" else None)


def base_program(method: str | None, run: RunConfig, roles, program=None):
    """The program to optimize: one given, a frozen artifact (the run's --program, implying its method) or a fresh
    `method` on the run's index."""
    if program is not None:
        return program
    if run.control.program:
        return load_frozen(run, roles)
    if not method:
        raise HyporagError("give --method (or --program, a frozen artifact to start from)")

    return build_program(method, run, build_retriever(run, method_entry(method).program.uses_retrieval), roles)


def reflection_lm(spec: str | None, run: RunConfig):
    """The LM that writes new instructions (GEPA's reflection, MIPROv2's prompt model), or None for the default."""
    if not spec:
        return None

    # a new instruction is free text, longer than any field the task LMs write
    return build_lm(spec, **{**lm_build_kwargs(run), "max_tokens": max(run.lms.max_tokens, 1024)})


# the search space's reader settings: how the readings are mixed, whether to read at all; none moves a passage's pull
READER_PARAMS = ("answer_mode", "on_demand", "mix", "mix_temperature", "prior_weight", "retrieve_below")


def refuse_unreadable_objective(objective: str, program, modes: list[str]) -> None:
    """`pull` is each retrieved passage's own effect on the reader: a study can maximise it only when its program
    reads passages one at a time and its search space changes which passages are read."""
    if objective != "pull":
        return
    name = getattr(program, "method", type(program).__name__)
    if not getattr(program, "uses_retrieval", True):
        raise ConfigError(f"--objective pull scores each retrieved passage's pull on the reader: {name} retrieves "
                          "nothing, so there is no passage to score; choose a method that retrieves")
    if program.config.answer_mode != "per-passage":
        raise ConfigError("--objective pull scores the passages read one at a time: give --answer per-passage "
                          f"({name} answers {program.config.answer_mode})")
    params = list(program.config.trial_params(modes[0], modes))
    moving = [p for p in params if p not in READER_PARAMS and not (p == "mode" and len(modes) < 2)]
    if not moving:
        raise ConfigError(f"--objective pull: {name}'s search space here ({', '.join(params)}) cannot move a "
                          "passage's pull, which depends on which passages are read, not on how their readings are "
                          "mixed; give --modes with two or more retriever modes the index holds, or another "
                          "--objective")


def tune_modes(program, requested: str | None) -> list[str]:
    """The retriever modes a study may pick: those the index holds, narrowed by `requested` ("bm25,dense"); a
    program that retrieves nothing has none to pick."""
    if not getattr(program, "uses_retrieval", True) or getattr(program, "retriever", None) is None:
        return [getattr(program, "mode", None) or "bm25"]
    available = [m for m in ("bm25", "dense", "hybrid") if mode_available(program.retriever, m)]
    modes = [m for m in (requested.split(",") if requested else available) if m in available]
    if not modes:
        raise HyporagError(f"none of the requested retriever modes are in the index (it has {', '.join(available)})")
    return modes


def mode_available(retriever, mode: str) -> bool:
    try:
        retriever._check(mode)
    except ConfigError:
        return False
    return True
