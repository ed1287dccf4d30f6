"""What every multiple-choice program shares: roles, one answer step, one context budget, and a rich Prediction.

Subclasses implement `retrieve` only, so methods differ in how they retrieve and in nothing else.
"""

from __future__ import annotations

import contextlib
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError

from hyporag.errors import ConfigError
from hyporag.programs.answer_step import AnswerStep, format_context
from hyporag.programs.cost import CostMeter
from hyporag.programs.lm import LMRoles
from hyporag.retrieval.hit import Hit
from hyporag.signatures import format_options


class Trace:
    """What a question's retrieval did: queries issued and the hypothesis state (kept for analysis only)."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.hypothesis: dict[str, Any] | None = None
        self.extra: dict[str, Any] = {}


class MCQProgram(dspy.Module):
    """Base program: `forward(question, options)` → Prediction(answer, passages, queries, hypothesis, cost, ...)."""

    method = "base"
    uses_retrieval = True
    default_sees_options = False

    def __init__(self, retriever=None, roles: LMRoles | None = None, budget: int = 15,
                 retrieval_sees_options: bool | None = None, reasoning: bool = False, mode: str | None = None):
        super().__init__()
        if self.uses_retrieval and retriever is None:
            raise ConfigError(f"method {self.method!r} needs a retriever (build one with `hyporag index build`)")
        if budget < 1:
            raise ConfigError("budget must be at least 1 passage")
        self.retriever = retriever
        self.roles = roles
        self.budget = budget
        self.mode = mode
        self.retrieval_sees_options = self.default_sees_options if retrieval_sees_options is None else (
            retrieval_sees_options)
        self.answer = AnswerStep(reasoning=reasoning)

    # -- helpers for subclasses ---------------------------------------------------------------------------------
    def role(self, name: str):
        """Context running a step under a role's LM and adapter (no-op when roles come from dspy.settings)."""
        return getattr(self.roles, name).context() if self.roles is not None else contextlib.nullcontext()

    def query_step(self, predictor: dspy.Module, meter: CostMeter, trace: Trace, **inputs: Any) -> Any:
        """Run a retrieval-side LM step under the hypothesis role; an unparseable reply returns None (the caller
        falls back to the question) and is counted, so one bad generation never sinks the question."""
        with meter.step("hypothesis"), self.role("hypothesis"):
            try:
                return predictor(**inputs)
            except AdapterParseError:
                trace.extra["query_parse_failures"] = trace.extra.get("query_parse_failures", 0) + 1
                return None

    def retrieval_options(self, options: dict[str, str]) -> str:
        """Options as the retrieval side may see them: all of them, or none under question-only retrieval."""
        return format_options(options) if self.retrieval_sees_options else ""

    def plain_query(self, question: str, options: dict[str, str]) -> str:
        return f"{question}\n{format_options(options)}" if self.retrieval_sees_options else question

    def retrieve(self, question: str, options: dict[str, str], meter: CostMeter, trace: Trace) -> list[Hit]:
        raise NotImplementedError

    def context_preface(self, trace: Trace) -> str:
        return ""

    def settings(self) -> dict[str, Any]:
        """Plain attributes DSPy's save() does not keep; the frozen artifact's manifest records them."""
        return {"method": self.method, "budget": self.budget, "retrieval_sees_options": self.retrieval_sees_options,
                "reasoning": self.answer.reasoning, "mode": self.mode}

    # -- the pipeline -------------------------------------------------------------------------------------------
    def forward(self, question: str, options: dict[str, str]) -> dspy.Prediction:
        meter, trace = CostMeter(), Trace()
        passages = self.retrieve(question, options, meter, trace)[: self.budget] if self.uses_retrieval else []
        with meter.step("answer"), self.role("answer"):
            result = self.answer(question=question, options=options,
                                 context=format_context(passages, self.context_preface(trace)))
        return dspy.Prediction(
            answer=result.answer,
            parse_failure=result.parse_failure,
            passages=[h.to_dict() for h in passages],
            queries=trace.queries,
            hypothesis=trace.hypothesis,
            retrieval_sees_options=self.retrieval_sees_options if self.uses_retrieval else None,
            method=self.method,
            cost=meter.as_dict(),
            **trace.extra,
        )
