"""What every command's parser shares, made from the settings classes' own fields (each flag, its help and its
allowed values are declared once, beside the setting: hyporag.foundation.settings), and how flags, the project file
and its per-command table become the typed settings the library takes."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

from hyporag.foundation.errors import ConfigError
from hyporag.foundation.settings import Settings
from hyporag.jobs.run_config import (
    PROJECT_FILE,
    RUN_FIELDS,
    RunConfig,
    build_run_config,
    program_fields,
    read_project_file,
)
from hyporag.jobs.run_groups import DataSettings, IndexSettings, LMSettings, RunControl, TrackingSettings
from hyporag.jobs.settings import JOBS, PROMPTS, STUDY, CompileSettings, JobSettings, TuneSettings
from hyporag.programs.registry import configs

ROUTING = {"command", "data_command", "index_command", "config", "debug"}
PROMPT_FIELDS = ("optimizer", "auto", "max_demos", "max_metric_calls", "reflection_lm")
STUDY_FIELDS = ("trials", "storage", "modes", "objective")


def add_settings(parser, cls: type[Settings], only: Iterable[str] | None = None, skip: Iterable[str] = (),
                 helps: dict[str, str] | None = None) -> None:
    """The flags of `cls`'s fields (those in `only`, none in `skip`), as its fields declare them."""
    only, skip, helps = set(only) if only is not None else None, set(skip), helps or {}
    for flags, arguments in cls.cli_arguments():
        name = arguments["dest"]
        if (only is not None and name not in only) or name in skip:
            continue
        parser.add_argument(*flags, **({**arguments, "help": helps[name]} if name in helps else arguments))


def add_data_args(parser: argparse.ArgumentParser) -> None:
    add_settings(parser, DataSettings, only=("data_dir",))


def add_lm_args(parser: argparse.ArgumentParser) -> None:
    add_settings(parser.add_argument_group("language models (DSPy/LiteLLM strings or local:<alias|file.gguf>)"),
                 LMSettings)


def add_program_args(parser: argparse.ArgumentParser) -> None:
    retrieval = parser.add_argument_group("retrieval")
    add_settings(retrieval, DataSettings, only=("corpus",))
    add_settings(retrieval, IndexSettings)
    group = parser.add_argument_group("program settings (each applies to the methods that have it)")
    seen: set[str] = set()
    for config in configs():  # every method's config declares its own flags; a shared one is added once
        for flags, arguments in config.cli_arguments():
            if flags[0] not in seen:
                seen.add(flags[0])
                group.add_argument(*flags, **arguments)


def add_model_and_program_args(parser: argparse.ArgumentParser) -> None:
    add_data_args(parser)
    add_lm_args(parser)
    add_program_args(parser)


def add_run_args(parser: argparse.ArgumentParser, dataset_help: str | None) -> None:
    """The run flags; `dataset_help` None: the command names its datasets itself (reproduce)."""
    if dataset_help:
        add_settings(parser, DataSettings, only=("dataset",), helps={"dataset": dataset_help})
    add_settings(parser, DataSettings, only=("limit", "seed"))
    add_settings(parser, RunControl, only=("threads",))
    add_settings(parser, TrackingSettings)
    add_settings(parser, DataSettings, only=("skip_bad_rows",))


def add_optimizer_args(parser: argparse.ArgumentParser, what: str, job: type[JobSettings] | None = None) -> None:
    """The flags `compile` and `fit` share (the teleprompter), and `tune` and `fit` (the study), as `job` declares
    them (default: compile's and tune's own)."""
    if what == PROMPTS:
        add_settings(parser, job or CompileSettings, only=PROMPT_FIELDS)
    elif what == STUDY:
        add_settings(parser, job or TuneSettings, only=STUDY_FIELDS)


def add_split_args(parser: argparse.ArgumentParser, job: type[JobSettings]) -> None:
    """The questions an optimizer sees and what it scores (compile, tune)."""
    add_model_and_program_args(parser)
    add_run_args(parser, "dev set to split (default medqa-dev); never a test split")
    add_settings(parser, job, only=("method", "metric", "allow_test", "out", "val_fraction", "trainset", "valset"))
    add_settings(parser, RunControl, only=("program",), helps={"program": "start from a frozen artifact directory"})


def _job_keys() -> dict[str, set[str]]:
    """Keys only a job has (not shared run or program settings), by job."""
    shared = RUN_FIELDS | program_fields()
    return {job: cls.field_names() - shared for job, cls in JOBS.items()}


def load_settings(args: argparse.Namespace, job: type[JobSettings] | None = None,
                  flags_for_job: dict | None = None) -> tuple[RunConfig, JobSettings | None]:
    """(the shared RunConfig, the job's settings): defaults < the project file's top level < its `[command]`
    table < the flags given. A key in the wrong place or unknown anywhere is refused naming file and key."""
    project, path = read_project_file(Path(args.config) if args.config else None)
    origin = path or PROJECT_FILE
    command = args.command
    shared = {k: v for k, v in project.items() if not isinstance(v, dict)}
    tables = {k: v for k, v in project.items() if isinstance(v, dict)}
    for name in tables:
        if name not in JOBS:
            raise ConfigError(f"{origin}: unknown table [{name}] (one table per command: {', '.join(JOBS)})")
    only_jobs = _job_keys()
    for key in shared:
        owners = [j for j, keys in only_jobs.items() if key.replace("-", "_") in keys]
        if owners:
            raise ConfigError(f"{origin}: {key} is a setting of {' and '.join(owners)}; put it under "
                              f"[{owners[0]}]")
    table = tables.get(command, {})
    job_keys = (job.field_names() - RUN_FIELDS) | job.OWN if job else set()
    job_part = {k: v for k, v in table.items() if k.replace("-", "_") in job_keys}
    run_part = {k: v for k, v in table.items() if k.replace("-", "_") not in job_keys}
    flags = {k: v for k, v in vars(args).items() if k not in ROUTING and k not in job_keys}
    config = build_run_config(flags, shared, origin, table=run_part, table_origin=f"{origin} [{command}]")
    if job is None:
        return config, None
    settings = job.from_dict(job_part, source=f"{origin} [{command}]")
    parsers = job.flag_parsers()
    given = {k: parsers[k](v) if k in parsers else v for k in job_keys
             if (v := getattr(args, k, None)) is not None}
    given.update({k: v for k, v in (flags_for_job or {}).items() if v is not None})
    settings = job.from_dict(given, source="command line", base=settings) if given else settings
    if "out" in job.field_names() and config.control.out and (getattr(settings, "out", None) is None
                                                             or config.sources.get("out") == "command line"):
        settings = settings.replace(out=config.control.out)  # shared `out` (top level or flag) serves the job too
    return config, settings
