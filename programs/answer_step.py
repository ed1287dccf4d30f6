"""The answer step every program ends with: question, options, then passages (last, for prefix caching)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import dspy
from dspy.utils.exceptions import AdapterParseError

from hyporag.lm.option_probs import TOP_LOGPROBS, letter_logprobs, wants_logprobs
from hyporag.programs.protocol import FAST, Protocol, protocol_named
from hyporag.retrieval.hit import Hit
from hyporag.signatures import AnswerQuestion, format_options, with_letters
from hyporag.signatures.domain import Domain, for_domain
from hyporag.signatures.paper_protocol import AnswerFromDocuments

NO_CONTEXT = "(no passages)"
PARSE_RULES = ("strict", "mirage")  # an unparseable answer: wrong, or MIRAGE's option A


def format_context(passages: Sequence[Hit], preface: str = "") -> str:
    """Numbered passages `[n] title. text`; an optional preface (e.g. a shown hypothesis) goes first."""
    lines = [preface] if preface else []
    lines += [f"[{i}] {h.title}. {h.contents}" if h.title else f"[{i}] {h.contents}" for i, h in
              enumerate(passages, start=1)]
    return "\n\n".join(lines) if lines else NO_CONTEXT


MIRAGE_FALLBACK = "A"  # MIRAGE's locate_answer: output that matches no choice is scored as option A


class AnswerStep(dspy.Module):
    """Predict the option letter; the answer is typed as a Literal of the letters present, so a JSON schema
    constrains it on local models. An unparseable reply is always counted as a parse failure; the `parse` rule
    says how it is scored: `strict`, wrong (no answer); `mirage`, MIRAGE's rule, option "A"."""

    def __init__(self, reasoning: bool = False, domain: Domain | None = None, parse: str = "strict",
                 protocol: Protocol | str = FAST):
        super().__init__()
        protocol = protocol_named(protocol)
        self.reasoning = reasoning or protocol.answer_reasons
        self.parse = parse
        # documents first: MedRAG's order (documents, then question, then choices) with reasoning before the
        # choice; otherwise passages last, so a question's calls share a cached prefix on llama.cpp
        base = AnswerFromDocuments if protocol.documents_first else AnswerQuestion
        signature = for_domain(base, domain or Domain())
        self.predict = dspy.ChainOfThought(signature) if self.reasoning else dspy.Predict(signature)

    def _unparseable(self, options: dict[str, str], reply: str | None, reasoning: str | None = None
                     ) -> dspy.Prediction:
        fallback = MIRAGE_FALLBACK if self.parse == "mirage" and MIRAGE_FALLBACK in options else None
        return dspy.Prediction(answer=fallback, parse_failure=True, reply=reply, reasoning=reasoning,
                               option_logprobs=None, option_logprob_status="unparsed")

    def forward(self, question: str, options: dict[str, str], context: str) -> dspy.Prediction:
        predictor = self.predict.predict if self.reasoning else self.predict
        base = predictor.signature
        signature = with_letters(base, tuple(options))
        # the reader's alternatives at the letter, from this same call (hyporag.lm.option_probs)
        asked = wants_logprobs(dspy.settings.lm)
        extra = {"config": {"logprobs": True, "top_logprobs": TOP_LOGPROBS}} if asked else {}
        try:
            try:
                result = predictor(question=question, options=format_options(options), context=context,
                                   signature=signature, **extra)
            except Exception as exc:  # a model that refuses logprobs (some hosted reasoning models): ask without
                if not asked or "logprob" not in str(exc).lower():
                    raise
                asked, extra = False, {}
                with contextlib.suppress(AttributeError):  # remembered: later questions do not ask again
                    dspy.settings.lm._hyporag_refuses_logprobs = True
                result = predictor(question=question, options=format_options(options), context=context,
                                   signature=signature)
        except AdapterParseError as exc:  # the reply is kept: a reader checks why it did not parse
            return self._unparseable(options, str(exc.lm_response)[:4000])
        reasoning = getattr(result, "reasoning", None)
        letter = str(result.answer).strip().upper()[:1]
        if letter not in options:
            return self._unparseable(options, str(result.answer)[:4000], reasoning)
        probabilities, status = (letter_logprobs(getattr(result, "logprobs", None), list(options), letter)
                                 if asked else (None, "none"))
        return dspy.Prediction(answer=letter, parse_failure=False, reply=str(result.answer)[:4000],
                               reasoning=reasoning, option_logprobs=probabilities, option_logprob_status=status)
