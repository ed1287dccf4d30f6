"""Retrieval drawn from the reader's own doubt: the options its closed-book answer is torn between, each given the
same retrieval, so that passages can move the reader either way (hypothesis_from = "reader")."""

from __future__ import annotations

import dspy


class QueriesForDoubt(dspy.Signature):
    """A reader of this {domain} question cannot decide between the options listed as torn. Write short search
    queries for a {corpus}, the same kind for each of those options: for each one, in the order given, a query that
    would find evidence that it is the answer; then one that would find what distinguishes them; then one that
    checks the question's key {clues} that would decide between them."""

    question: str = dspy.InputField()
    torn: str = dspy.InputField(desc="the options the reader is torn between, one per line, 'LETTER. text'")
    evidence_queries: list[str] = dspy.OutputField(desc="one query per torn option, in the order given; each under "
                                                        "25 words")
    distinction_query: str = dspy.OutputField(desc="what tells these options apart; under 25 words")
    clues_query: str = dspy.OutputField(desc="the question's key clues that decide between them; under 25 words")


class StatementsForDoubt(dspy.Signature):
    """A reader of this {domain} question cannot decide between the options listed as torn. For each of them, in
    the order given, state as a {domain} fact (not a letter) why it would be the answer, one sentence each, each as
    convincing as the others."""

    question: str = dspy.InputField()
    torn: str = dspy.InputField(desc="the options the reader is torn between, one per line, 'LETTER. text'")
    statements: list[str] = dspy.OutputField(desc="one sentence per torn option, in the order given")
