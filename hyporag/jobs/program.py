"""Loading a frozen program as a Python user does: the artifact directory, the LMs, optionally the index."""

from __future__ import annotations

from pathlib import Path

from hyporag.jobs.builders import artifact_config, load_frozen
from hyporag.jobs.evaluate import as_roles
from hyporag.jobs.run_config import RunConfig


def load_program(directory: str | Path, roles=None, run: RunConfig | None = None):
    """The frozen program (a dspy.Module) on the index it was compiled against, with its own settings (protocol
    included); `roles` default to the run's LM specs, built as the freezing process built them."""

    run = artifact_config((run or RunConfig()).replace(program=str(directory)))
    return load_frozen(run, as_roles(roles, run))
