"""`hyporag.ask`: one question through one method (or the run's frozen `--program`), as `hyporag ask` does.

    result = hyporag.ask(AskSettings(question="Which organ produces insulin?",
                                     options={"A": "Liver", "B": "Pancreas"}, method="hcqr"), RunConfig(budget=5))
    result.prediction.answer, result.prediction.passages, result.seconds
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

import dspy

from hyporag.jobs.builders import artifact_config, build_program, build_retriever, fit_to_context, load_frozen
from hyporag.jobs.evaluate import as_roles
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import AskSettings
from hyporag.programs.registry import method_entry


@dataclass(frozen=True)
class AskResult:
    """The program's prediction (answer, passages, queries, hypothesis, cost), the program that made it, and the
    seconds the question took."""

    prediction: dspy.Prediction
    method: str
    calls_expected: float
    seconds: float


def ask(settings: AskSettings, run: RunConfig | None = None, roles=None, progress: bool = False) -> AskResult:
    """Answer `settings.question`; the question is checked against the answer model's context before any call.
    `progress` says what is happening on stderr (a CPU model takes seconds to minutes a call)."""
    settings.ready()
    run = run or RunConfig()
    if run.control.program:
        run = artifact_config(run)
    roles = as_roles(roles, run)
    if run.control.program:
        program: Any = load_frozen(run, roles)
    else:
        method = settings.method or "rag"
        uses_retrieval = method_entry(method).program.uses_retrieval  # an unknown name is refused before any load
        program = build_program(method, run, build_retriever(run, uses_retrieval), roles)
    probe = dspy.Example(id="ask", question=settings.question, options=dict(settings.options))
    fit_to_context([probe], lambda example: "--question", {program.method: program}, roles, run)
    if progress:
        print(f"asking {program.method} with {roles.answer.spec} (a CPU model takes seconds to minutes a call; "
              f"{program.calls_per_question:g} calls expected)...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    prediction = program(question=settings.question, options=dict(settings.options))
    return AskResult(prediction, program.method, program.calls_per_question, time.perf_counter() - started)
