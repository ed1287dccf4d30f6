"""`hyporag.compile`: tune a program's prompts with a DSPy teleprompter and freeze it into an artifact."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hyporag.jobs.builders import artifact_config
from hyporag.jobs.evaluate import as_roles
from hyporag.jobs.optimizing import base_program, make_metric_for, optimizer_splits, reflection_lm
from hyporag.jobs.program import load_program
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import CompileSettings
from hyporag.jobs.tracking import tracked_job
from hyporag.optimizers.artifact import save_artifact
from hyporag.optimizers.teleprompter import compile_program


@dataclass
class CompileResult:
    """The frozen artifact and what the compile measured on validation."""

    artifact: Path
    before: float
    after: float
    seconds: float
    lm_calls: int
    cost_by_phase: dict[str, Any] = field(default_factory=dict)

    def load(self, roles=None, run: RunConfig | None = None):
        """The frozen program (a dspy.Module) on the index it was compiled against."""

        return load_program(self.artifact, roles=roles, run=run)


def compile(settings: CompileSettings, run: RunConfig | None = None, roles=None, program=None,  # noqa: A001
            examples: Sequence | None = None) -> CompileResult:
    """Compile `program` (or the settings' method, or the run's --program) on a seeded train / validation split;
    with `run.tracking.track`, one MLflow run holding the frozen artifact."""
    run = run or RunConfig()
    with tracked_job(run, "compile", settings, settings.out, beside=True) as tracker:
        result = _compile(settings, run, roles, program, examples)
        if tracker:
            tracker.metrics({"validation_before": result.before, "validation_after": result.after,
                             "seconds": result.seconds, "lm_calls": result.lm_calls})
            tracker.directory(result.artifact, "artifact")
    return result


def _compile(settings: CompileSettings, run: RunConfig, roles, program, examples) -> CompileResult:
    if run.control.program:  # a frozen start point brings its own settings (protocol included) for the LMs too
        run = artifact_config(run)
    roles = as_roles(roles, run)
    train, val, split = optimizer_splits(settings, run, examples)
    program = base_program(settings.method, run, roles, program)
    metric = make_metric_for(settings.metric, roles)
    print(f"compile {program.method} with {settings.optimizer} on {split['train_size']} train / "
          f"{split['val_size']} val questions, metric {settings.metric}", file=sys.stderr)
    result = compile_program(program, train, val, settings.optimizer, metric, roles, auto=settings.auto,
                             max_demos=settings.max_demos, seed=run.data.seed, threads=run.control.threads,
                             max_metric_calls=settings.max_metric_calls,
                             reflection_lm=reflection_lm(settings.reflection_lm, run))
    if settings.optimizer in ("gepa", "mipro"):
        result.settings["reflection_lm"] = settings.reflection_lm or roles.hypothesis.spec
    out = Path(settings.out or Path("artifacts") / f"{program.method}-{settings.optimizer}")
    save_artifact(out, result.program, program.retriever, roles.specs(), {
        "optimizer": result.settings, "metric": settings.metric, "splits": split,
        "validation": {"before": result.before, "after": result.after},
        "cost": {"seconds": round(result.seconds, 1), "lm_calls": result.calls, "by_phase": result.cost_by_phase}})
    return CompileResult(out, result.before, result.after, result.seconds, result.calls, result.cost_by_phase)
