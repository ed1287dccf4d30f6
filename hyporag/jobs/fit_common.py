"""What a one-method fit and a several-method fit share: the questions, the fit directory, and the plan."""

from __future__ import annotations

import json
from pathlib import Path

from hyporag.foundation.errors import HyporagError
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import FitSettings
from hyporag.optimizers.fit import FitPlan
from hyporag.questions.datasets import load_benchmark


def fit_questions(settings: FitSettings, run: RunConfig):
    """(the load report, the questions a fit splits, its directory, created): a file where the directory should be
    is refused."""
    loaded = load_benchmark(run.data.dataset, run.data.data_dir, skip_bad_rows=run.data.skip_bad_rows)
    examples = loaded.examples[: run.data.limit] if run.data.limit else loaded.examples
    out = Path(settings.out)
    if out.exists() and not out.is_dir():
        raise HyporagError(f"{out}: is a file, not a directory; give --out a directory")
    out.mkdir(parents=True, exist_ok=True)
    return loaded, examples, out


def fit_plan(settings: FitSettings, run: RunConfig, method: str, questions: str) -> FitPlan:
    return FitPlan(method=method, dataset=run.data.dataset, out=str(settings.out), fractions=tuple(settings.splits),
                   trials=settings.trials, optimizer=settings.optimizer, metric=settings.metric, seed=run.data.seed,
                   objective=settings.objective, max_demos=settings.max_demos,
                   program_settings=tuple(sorted((k, json.dumps(v)) for k, v in run.program_settings.items())),
                   questions=questions, baseline=run.control.baseline)
