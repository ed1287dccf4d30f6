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
from hyporag.programs.answer_modes import answer_mode_for, closed_book_answer
from hyporag.programs.answer_step import AnswerStep
from hyporag.programs.config import ProgramConfig
from hyporag.programs.hypothesis import Hypothesis
from hyporag.programs.per_passage import Reading, read_closed_book
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
        self.closed_book: Reading | None = None  # the reader's answer without passages, where it was read first

    def fell_back(self, kind: str, why: str | None = None) -> None:
        """Record a fallback: with a reason it is kept (the last one), without one it is counted. Every report counts
        rows with each kind, so a fallback never passes for the method working as designed."""
        self.fallbacks[kind] = why if why is not None else self.fallbacks.get(kind, 0) + 1


def expected_calls(program: type[MCQProgram], config: ProgramConfig) -> float:
    """LM calls a question costs under `config`: the method's own retrieval calls and its answer mode's reading (at
    most: closed-book first skips the rest where the reader is sure)."""
    if not program.uses_retrieval:
        return float(program.estimated_calls)
    return float(program.retrieval_calls(config) + answer_mode_for(config).calls(config.budget)
                 + program.closed_book_calls(config))


def cost_note(name: str, program: Any) -> str | None:
    """What the program's answer mode costs a question against the joint answer, said before a run."""
    config = getattr(program, "config", None)
    if config is None or not getattr(program, "uses_retrieval", False):
        return None
    return answer_mode_for(config).note(name, float(program.estimated_calls), program.calls_per_question)


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

    @classmethod
    def retrieval_calls(cls, config: ProgramConfig) -> float:
        """LM calls the retrieval side makes a question (the declared count, less its one joint answer)."""
        return cls.estimated_calls - 1

    @classmethod
    def closed_book_calls(cls, config: ProgramConfig) -> float:
        """Calls the retrieval side adds for a closed-book reading its answer mode does not read (hypotheses from the
        reader's doubt: hcqr and chr)."""
        return 1.0 if cls.wants_closed_book(config) and not answer_mode_for(config).needs_closed_book else 0.0

    @classmethod
    def wants_closed_book(cls, config: ProgramConfig) -> bool:
        """Whether retrieval reads the reader's closed-book answer (a method whose hypotheses come from it)."""
        return False

    # -- the pipeline: closed-book reading where needed, retrieve, read ------------------------------------------
    def forward(self, question: str, options: dict[str, str]) -> dspy.Prediction:
        meter, trace = CostMeter(), Trace()
        mode = answer_mode_for(self.config)
        if self.uses_retrieval and (mode.needs_closed_book or self.wants_closed_book(self.config)):
            with meter.step("answer"), self.role("answer"):
                trace.closed_book = read_closed_book(self.answer, question, options)
        fields = {"closed_book": trace.closed_book.to_dict()} if trace.closed_book else {}
        if self.uses_retrieval and not mode.retrieves(trace.closed_book, trace):  # sure: the closed-book answer
            return self._prediction(closed_book_answer(trace.closed_book), [], meter, trace,
                                    {**fields, "retrieved": False})
        passages = self.retrieve(question, options, meter, trace)[: self.budget] if self.uses_retrieval else []
        with meter.step("answer"), self.role("answer"):
            result, own = mode.read(self.answer, question, options, passages, trace.closed_book,
                                    self.context_preface(trace), trace)
        return self._prediction(result, passages, meter, trace, {**fields, **own})

    def _prediction(self, result: dict, passages: list[Hit], meter: CostMeter, trace: Trace,
                    reading: dict[str, Any]) -> dspy.Prediction:
        return dspy.Prediction(
            answer=result["answer"],
            parse_failure=bool(result["parse_failure"]),
            answer_reply=result.get("reply"),  # the answer field as the LM wrote it
            answer_reasoning=result.get("reasoning"),
            option_logprobs=result.get("option_logprobs"),  # the reader's belief over the options
            option_logprob_status=result.get("option_logprob_status"),
            reading=reading,  # the answer mode's own row fields (closed-book answer, readings, weights, retrieved)
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
            **reading,
        )
