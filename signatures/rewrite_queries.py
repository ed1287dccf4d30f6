"""HCQR step 2: three retrieval queries conditioned on the hypothesis."""

from __future__ import annotations

import dspy


class RewriteQueries(dspy.Signature):
    """Write three short search queries for a {corpus}, given a question and a working hypothesis:
    one that would find support for the hypothesis, one that would distinguish it from the strongest
    alternative options, and one that verifies the key {clues} stated in the question."""

    question: str = dspy.InputField()
    options: str = dspy.InputField(desc="one option per line, 'LETTER. text'; may be empty")
    hypothesis: str = dspy.InputField(desc="working hypothesis: likely option, features, expected evidence")
    support_query: str = dspy.OutputField(desc="finds evidence for the hypothesis; under 25 words")
    distinction_query: str = dspy.OutputField(desc="contrasts it with the strongest alternative; under 25 words")
    key_features_query: str = dspy.OutputField(desc="checks the question's key clues; under 25 words")
