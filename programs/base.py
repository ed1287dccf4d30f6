"""What every multiple-choice program shares: roles, one answer step, one context budget, and a rich Prediction.

Subclasses implement `retrieve` only, so methods differ in how they retrieve and in nothing else.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, ClassVar

import dspy
from dspy.utils.exceptions import AdapterParseError

from hyporag.foundation.errors import ConfigError
from hyporag.lm.client import LMRoles
from hyporag.lm.cost import CostMeter
from hyporag.lm.engine_rules import engine_rules
from hyporag.programs.answer_step import AnswerStep, format_context
from hyporag.programs.config import ProgramConfig
from hyporag.programs.hypothesis import Hypothesis
from hyporag.programs.per_passage import Reading, combine, read_closed_book, read_each
from hyporag.programs.protocol import Protocol
from hyporag.retrieval.hit import Hit
from hyporag.signatures import format_options
from hyporag.signatures.domain import Domain, for_domain


class Trace:
    """What a question's retrieval did: queries issued, the hypothesis (kept for analysis only), the fallbacks it
    took (kind -> why, or how often) and the program's own row fields (`extra`, named by its `row_fields`)."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.hypothesis: Hypothesis | None = None
        self.fallbacks: dict[str, Any] = {}
        self.extra: dict[str, Any] = {}

    def fell_back(self, kind: str, why: str | None = None) -> None:
        """Record a fallback: with a reason it is kept (the last one), without one it is counted. Every report counts
        rows with each kind, so a fallback never passes for the method working as designed."""
        self.fallbacks[kind] = why if why is not None else self.fallbacks.get(kind, 0) + 1


def expected_calls(program: type[MCQProgram], config: ProgramConfig) -> float:
    """LM calls a question costs under `config`: the method's own, plus, per passage, the closed-book reading and
    one reading per passage in place of the joint answer; answering closed-book first adds that call (at most: a
    question the reader is sure of skips the rest)."""
    calls = program.estimated_calls
    if program.uses_retrieval and config.answer_mode == "per-passage":
        calls += config.budget
    elif program.uses_retrieval and config.retrieve_below is not None:
        calls += 1
    return float(calls)


class MCQProgram(dspy.Module):
    """Base program: `forward(question, options)` → Prediction(answer, passages, queries, hypothesis, cost, ...).

    Its settings are one typed config (`Config`): pass `config=`, or the fields as keywords (`budget=5`)."""

    method = "base"
    Config: type[ProgramConfig] = ProgramConfig
    uses_retrieval = True
    default_sees_options = False
    estimated_calls: ClassVar[float] = 2.0  # LM calls a question costs (answer included): fit's cost estimate
    # the program's own per-question fields and their defaults, kept in each result row's `details` by the evaluation
    row_fields: ClassVar[dict[str, Any]] = {}

    def __init__(self, retriever=None, roles: LMRoles | None = None, config: ProgramConfig | None = None,
                 **settings: Any):
        super().__init__()
        config = config or self.Config()
        if not isinstance(config, self.Config):
            raise ConfigError(f"{type(self).__name__} takes a {self.Config.__name__}, not {type(config).__name__}")
        if settings:
            config = self.Config.from_dict({**config.to_dict(), **settings}, source=f"{type(self).__name__}(...)")
        if config.retrieval_sees_options is None:  # record the rule that actually runs
            config = config.replace(retrieval_sees_options=self.default_sees_options)
        if not self.uses_retrieval and (config.answer_mode != "joint" or config.retrieve_below is not None):
            config = config.replace(answer_mode="joint", retrieve_below=None)  # nothing to read apart: what runs
        if self.uses_retrieval and retriever is None:
            raise ConfigError(f"method {self.method!r} needs a retriever (build one with `hyporag index build`)")
        self.retriever = retriever
        self.roles = roles
        self.config = config
        self.domain = Domain.named(config.domain, config.corpus_description)
        self.answer = AnswerStep(reasoning=config.reasoning, domain=self.domain, parse=config.parse,
                                 protocol=config.rules)

    @property
    def protocol(self) -> Protocol:
        return self.config.rules

    def protocol_record(self) -> dict:
        """Every rule this program ran under, for the artifact manifest: the protocol's, the method's own and the
        LM layer's (adapter, output cap)."""
        own = type(self.config).protocol_rules.get(self.config.protocol)
        return {**self.protocol.record(), **(dataclasses.asdict(own) if own is not None else {}),
                **engine_rules(self.protocol.name).record()}

    @property
    def calls_per_question(self) -> float:
        return expected_calls(type(self), self.config)

    @property
    def budget(self) -> int:
        return self.config.budget

    @property
    def mode(self) -> str | None:
        return self.config.mode

    @property
    def retrieval_sees_options(self) -> bool:
        return bool(self.config.retrieval_sees_options)

    # -- helpers for subclasses ---------------------------------------------------------------------------------
    def step(self, signature: type[dspy.Signature]) -> dspy.Predict:
        """A predictor for one step, its instruction filled in for this program's domain."""
        return dspy.Predict(for_domain(signature, self.domain))

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
                trace.fell_back("query")
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
        """What DSPy's save() does not keep (it keeps prompts only): the method and its config."""
        return {"method": self.method, **self.config.to_dict()}

    def effective_settings(self) -> dict[str, Any]:
        """The settings with every derived default resolved (HCQR's k and merge under a protocol): what ran."""
        return self.settings()

    # -- the pipeline -------------------------------------------------------------------------------------------
    def forward(self, question: str, options: dict[str, str]) -> dspy.Prediction:
        meter, trace = CostMeter(), Trace()
        closed_book = None
        if self.uses_retrieval and self.config.retrieve_below is not None:  # closed-book first: retrieve if unsure
            with meter.step("answer"), self.role("answer"):
                closed_book = read_closed_book(self.answer, question, options)
            top = closed_book.top_probability
            if top is None:
                trace.fell_back("on_demand", "no option probabilities to judge the closed-book answer by: retrieved")
            elif top >= self.config.retrieve_below:
                sure = self._result(closed_book.answer, closed_book.parse_failure, closed_book.option_logprobs,
                                    closed_book.status)
                return self._prediction(sure, [], meter, trace, closed_book=closed_book, retrieved=False)
        passages = self.retrieve(question, options, meter, trace)[: self.budget] if self.uses_retrieval else []
        on_demand = True if self.config.retrieve_below is not None and self.uses_retrieval else None
        if self.config.answer_mode == "per-passage" and passages:
            with meter.step("answer"), self.role("answer"):
                if closed_book is None:
                    closed_book = read_closed_book(self.answer, question, options)
                readings = read_each(self.answer, question, options, passages, self.context_preface(trace))
            mixed = combine(closed_book, readings, list(options), self.config.prior_weight,
                            self.config.mix_temperature, self.config.mix)
            if mixed["voted"]:
                trace.fell_back("vote")
            result = self._result(mixed["answer"], mixed["answer"] is None, mixed["option_logprobs"], mixed["status"])
            return self._prediction(result, passages, meter, trace, closed_book=closed_book, readings=readings,
                                    weights=mixed["weights"], retrieved=on_demand)
        with meter.step("answer"), self.role("answer"):
            answered = self.answer(question=question, options=options,
                                   context=format_context(passages, self.context_preface(trace)))
        result = self._result(answered.answer, answered.parse_failure, getattr(answered, "option_logprobs", None),
                              getattr(answered, "option_logprob_status", None), getattr(answered, "reply", None),
                              getattr(answered, "reasoning", None))
        return self._prediction(result, passages, meter, trace, closed_book=closed_book, retrieved=on_demand)

    @staticmethod
    def _result(answer: str | None, parse_failure: bool, option_logprobs: dict | None, status: str | None,
                reply: str | None = None, reasoning: str | None = None) -> dict:
        """The answer step's fields, whichever step answered (joint, mixed readings or the closed-book reading)."""
        return {"answer": answer, "parse_failure": parse_failure, "reply": reply, "reasoning": reasoning,
                "option_logprobs": option_logprobs, "option_logprob_status": status}

    def _prediction(self, result: dict, passages: list[Hit], meter: CostMeter, trace: Trace,
                    closed_book: Reading | None = None, readings: list[Reading] | None = None,
                    weights: list[float] | None = None, retrieved: bool | None = None) -> dspy.Prediction:
        return dspy.Prediction(
            answer=result["answer"],
            parse_failure=bool(result["parse_failure"]),
            answer_reply=result.get("reply"),  # the answer field as the LM wrote it
            answer_reasoning=result.get("reasoning"),
            option_logprobs=result.get("option_logprobs"),  # the reader's belief over the options
            option_logprob_status=result.get("option_logprob_status"),
            closed_book=closed_book.to_dict() if closed_book else None,  # the prior / the on-demand first answer
            passage_readings=[r.to_dict() for r in readings or []],  # per-passage: each passage read alone
            mixture_weights=weights,  # per-passage: the prior's weight, then each passage's
            retrieved=retrieved,  # retrieval on demand: whether this question retrieved (None: not on demand)
            passages=[h.to_dict() for h in passages],
            queries=trace.queries,
            hypothesis=trace.hypothesis.to_dict() if trace.hypothesis else None,
            hypothesis_option=trace.hypothesis.option if trace.hypothesis else None,
            fallbacks=dict(trace.fallbacks),
            row_fields={name: trace.extra.get(name, default) for name, default in self.row_fields.items()},
            retrieval_sees_options=self.retrieval_sees_options if self.uses_retrieval else None,
            method=self.method,
            cost=meter.as_dict(),
            **trace.extra,
        )
