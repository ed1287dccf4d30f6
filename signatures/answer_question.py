"""The one answer step every program shares, so methods differ only in what they retrieve."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

import dspy


class AnswerQuestion(dspy.Signature):
    """Answer the multiple-choice {domain} question with the letter of the single best option.
    Use the context passages when they help; rely on your own knowledge when they do not."""

    question: str = dspy.InputField()
    options: str = dspy.InputField(desc="one option per line, 'LETTER. text'")
    context: str = dspy.InputField(desc="retrieved passages, may be empty")
    answer: str = dspy.OutputField(desc="the option letter")


@lru_cache(maxsize=64)
def with_letters(signature: type[dspy.Signature], letters: tuple[str, ...]) -> type[dspy.Signature]:
    """The signature with `answer` typed as a Literal of exactly the letters present, so a schema constrains it."""
    return signature.with_updated_fields("answer", type_=Literal[letters])  # type: ignore[valid-type]


def format_options(options: dict[str, str]) -> str:
    return "\n".join(f"{letter}. {text}" for letter, text in options.items())
