"""HCQR step 1: a working hypothesis formed from the question and its options; it steers retrieval only."""

from __future__ import annotations

import dspy


class Hypothesize(dspy.Signature):
    """Form a working hypothesis for this multiple-choice {domain} question before looking anything up.
    Name the most likely option, the features that set it apart from the other options, the evidence a
    reference text would contain if it is right, and a one-sentence rationale. Keep every field short."""

    question: str = dspy.InputField()
    options: str = dspy.InputField(desc="one option per line, 'LETTER. text'; may be empty")
    likely_option: str = dspy.OutputField(desc="the letter (or the short answer when there are no options)")
    discriminating_features: list[str] = dspy.OutputField(desc="2-3 short features that separate it from the others")
    expected_evidence: str = dspy.OutputField(desc="one sentence a {source} would state if the hypothesis is right")
    rationale: str = dspy.OutputField(desc="one short sentence")
