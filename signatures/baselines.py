"""Signatures of the baselines the papers compare against: one rewrite, HyDE, Query2doc, and a rerank judgment."""

from __future__ import annotations

import dspy


class RewriteQuery(dspy.Signature):
    """Rewrite the {domain} question into one short search query for a {corpus}."""

    question: str = dspy.InputField()
    options: str = dspy.InputField(desc="one option per line; may be empty when retrieval must not see options")
    query: str = dspy.OutputField(desc="under 25 words")


class RephraseQuestion(dspy.Signature):
    """Rephrase the {domain} question as three different short search queries for a {corpus}, each a different
    wording of what the question asks (multi-query rewriting: their results are merged)."""

    question: str = dspy.InputField()
    options: str = dspy.InputField(desc="one option per line; may be empty when retrieval must not see options")
    queries: list[str] = dspy.OutputField(desc="exactly three queries, each under 25 words")


class HypotheticalDocument(dspy.Signature):
    """Write a short {source} passage that answers the question (HyDE: the passage is embedded, not shown)."""

    question: str = dspy.InputField()
    options: str = dspy.InputField(desc="one option per line; may be empty")
    passage: str = dspy.OutputField(desc="3-4 sentences in {source} style")


class Query2Doc(dspy.Signature):
    """Write a short pseudo-document that answers the question; it is appended to the question as the query."""

    question: str = dspy.InputField()
    options: str = dspy.InputField(desc="one option per line; may be empty")
    pseudo_document: str = dspy.OutputField(desc="2-3 sentences")


class Rerank(dspy.Signature):
    """Pick the passages that help answer the question, most useful first."""

    question: str = dspy.InputField()
    options: str = dspy.InputField(desc="one option per line; may be empty")
    passages: str = dspy.InputField(desc="numbered passages '[n] text'")
    useful_passages: list[int] = dspy.OutputField(desc="passage numbers, most useful first")
