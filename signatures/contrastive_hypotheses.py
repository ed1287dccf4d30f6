"""CHR: a target hypothesis (the likely answer) and a mimic (the most plausible wrong answer), in one call."""

from __future__ import annotations

import dspy


class ContrastiveHypotheses(dspy.Signature):
    """For this multiple-choice {domain} question, state two hypotheses as {domain} facts, not letters:
    the target (the most likely correct answer and why it fits the question) and the mimic (the most
    plausible wrong answer, stated so that it would fit if it were right). One sentence each."""

    question: str = dspy.InputField()
    options: str = dspy.InputField(desc="one option per line, 'LETTER. text'; may be empty")
    target_hypothesis: str = dspy.OutputField(desc="one sentence stating the likely answer as a {domain} fact")
    mimic_hypothesis: str = dspy.OutputField(desc="one sentence stating the strongest wrong answer as a fact")
