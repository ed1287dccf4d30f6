"""Reading the final context one passage at a time (`answer = "per-passage"`), and answering closed-book first
(`retrieve_below`): the answer step's calls and how their readings become one answer (programs.mixture).

Every reading is the program's own answer step (its compiled prompt and demos), with one passage as the context,
so a question's readings share the prompt up to the passage byte for byte (system, question, options) and llama.cpp
prefills that once. The closed-book reading is the same call `cot` makes, so a run beside cot reuses its reply from
the cache. On a served model the readings go out together (up to MAX_PARALLEL at once); the embedded engine has
one slot, and takes them in turn.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

import dspy

from hyporag.programs.answer_step import NO_CONTEXT, format_context
from hyporag.programs.mixture import mix, vote
from hyporag.retrieval.hit import Hit

MAX_PARALLEL = 4


@dataclass
class Reading:
    """One answer call's outcome: its letter and, where the backend gave them, its option log-probabilities."""

    answer: str | None
    option_logprobs: dict | None
    status: str | None
    parse_failure: bool = False

    @property
    def distribution(self) -> dict[str, float] | None:
        return self.option_logprobs if self.status == "ok" else None

    @property
    def top_probability(self) -> float | None:
        return math.exp(max(self.distribution.values())) if self.distribution else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def read(answer_step: dspy.Module, question: str, options: dict[str, str], context: str) -> Reading:
    result = answer_step(question=question, options=options, context=context)
    return Reading(result.answer, getattr(result, "option_logprobs", None),
                   getattr(result, "option_logprob_status", None), bool(result.parse_failure))


def read_closed_book(answer_step: dspy.Module, question: str, options: dict[str, str]) -> Reading:
    return read(answer_step, question, options, NO_CONTEXT)


def served(lm: Any) -> bool:
    """A model behind an HTTP server (or a pool of them), which can take a question's readings at once."""
    return bool((getattr(lm, "kwargs", None) or {}).get("api_base") or getattr(lm, "_hyporag_endpoints", None))


def read_each(answer_step: dspy.Module, question: str, options: dict[str, str], passages: Sequence[Hit],
              preface: str = "") -> list[Reading]:
    """Each passage read alone, in context order."""
    contexts = [format_context([passage], preface) for passage in passages]
    if len(contexts) < 2 or not served(dspy.settings.lm):
        return [read(answer_step, question, options, c) for c in contexts]
    with ThreadPoolExecutor(max_workers=min(len(contexts), MAX_PARALLEL)) as pool:
        futures = [pool.submit(contextvars.copy_context().run, read, answer_step, question, options, c)
                   for c in contexts]
        return [f.result() for f in futures]


def combine(prior: Reading | None, readings: Sequence[Reading], letters: Sequence[str], prior_weight: float,
            temperature: float, rule: str) -> dict[str, Any]:
    """The mixed answer: its letter, its option log-probabilities (None when no reading had them: the readings
    then vote, and `voted` says so) and each input's weight (the prior first)."""
    distribution, weights = mix(prior.distribution if prior else None, [r.distribution for r in readings],
                                letters, prior_weight, temperature, rule)
    if distribution is not None:
        best = max(distribution.values())
        answer = next(o for o in letters if distribution[o] == best)
        return {"answer": answer, "option_logprobs": distribution, "status": "ok", "weights": weights,
                "voted": False}
    answer = vote(prior.answer if prior else None, [r.answer for r in readings], letters, prior_weight, temperature)
    return {"answer": answer, "option_logprobs": None, "status": "none", "weights": weights, "voted": True}
