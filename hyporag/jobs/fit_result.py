"""What `hyporag.fit` returns: the fit directory, its record and its frozen artifact."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyporag.jobs.program import load_program
from hyporag.jobs.run_config import RunConfig


@dataclass
class FitResult:
    """The fit directory, its stages (fit.json's content) and the frozen artifact."""

    out: Path
    state: dict[str, Any]

    @property
    def artifact(self) -> Path:
        return self.out / "artifact"

    @property
    def heldout_accuracy(self) -> dict[str, float]:
        """Held-out accuracy: of rag, the untuned and the tuned program; of a multi-method fit, its chosen program,
        rag, cot and the runner-up."""
        return self.state["stages"]["evaluate"]["accuracy"]

    @property
    def stopped(self) -> str | None:
        """Why a fit stopped before its last stage (`max_minutes`); None when it finished."""
        return self.state.get("stopped")

    def load(self, roles=None, run: RunConfig | None = None):
        return load_program(self.artifact, roles=roles, run=run)
