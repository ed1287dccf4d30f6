"""The answer step every program ends with: question, options, then passages (last, for prefix caching)."""

from __future__ import annotations

from collections.abc import Sequence

import dspy
from dspy.utils.exceptions import AdapterParseError

from hyporag.retrieval.hit import Hit
from hyporag.signatures import AnswerQuestion, format_options, with_letters
from hyporag.signatures.domain import Domain, for_domain

NO_CONTEXT = "(no passages)"


def format_context(passages: Sequence[Hit], preface: str = "") -> str:
    """Numbered passages `[n] title. text`; an optional preface (e.g. a shown hypothesis) goes first."""
    lines = [preface] if preface else []
    lines += [f"[{i}] {h.title}. {h.contents}" if h.title else f"[{i}] {h.contents}" for i, h in
              enumerate(passages, start=1)]
    return "\n\n".join(lines) if lines else NO_CONTEXT


class AnswerStep(dspy.Module):
    """Predict the option letter; the answer is typed as a Literal of the letters present, so a JSON schema
    constrains it on local models. An unparseable reply is a parse failure (scored wrong, as MIRAGE does)."""

    def __init__(self, reasoning: bool = False, domain: Domain | None = None):
        super().__init__()
        self.reasoning = reasoning
        signature = for_domain(AnswerQuestion, domain or Domain())
        self.predict = dspy.ChainOfThought(signature) if reasoning else dspy.Predict(signature)

    def forward(self, question: str, options: dict[str, str], context: str) -> dspy.Prediction:
        predictor = self.predict.predict if self.reasoning else self.predict
        base = predictor.signature
        signature = with_letters(base, tuple(options))
        try:
            result = predictor(question=question, options=format_options(options), context=context,
                               signature=signature)
        except AdapterParseError:
            return dspy.Prediction(answer=None, parse_failure=True)
        letter = str(result.answer).strip().upper()[:1]
        if letter not in options:
            return dspy.Prediction(answer=None, parse_failure=True)
        return dspy.Prediction(answer=letter, parse_failure=False)
