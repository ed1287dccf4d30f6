"""The DUR judge: is the retrieved context decision-useful for this question? One listwise call per question."""

from __future__ import annotations

from typing import Literal

import dspy


class JudgeContextUtility(dspy.Signature):
    """Judge the retrieved context for a multiple-choice question whose correct answer is given.
    Entailed: the context states or directly implies the correct answer.
    Useful: the context gives evidence that favours the correct answer or rules out alternatives, without entailing it.
    NotUseful: the context does not help choose between the options."""

    question: str = dspy.InputField()
    options: str = dspy.InputField()
    gold_answer: str = dspy.InputField(desc="the correct option, 'LETTER. text'")
    context: str = dspy.InputField()
    label: Literal["Entailed", "Useful", "NotUseful"] = dspy.OutputField()
    reason: str = dspy.OutputField(desc="one line")
