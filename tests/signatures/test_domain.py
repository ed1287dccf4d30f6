"""The domain is filled into every instruction: the medical default reads as before, another domain has no
medical word left."""

from __future__ import annotations

import pytest

from hyporag.signatures import (
    AnswerQuestion,
    ContrastiveHypotheses,
    Hypothesize,
    HypotheticalDocument,
    Query2Doc,
    RephraseQuestion,
    Rerank,
    RewriteQueries,
    RewriteQuery,
)
from hyporag.signatures.domain import Domain, for_domain

ALL = (AnswerQuestion, ContrastiveHypotheses, HypotheticalDocument, Hypothesize, Query2Doc, RephraseQuestion, Rerank,
       RewriteQueries, RewriteQuery)


def text_of(signature) -> str:
    return signature.instructions + " " + " ".join(
        str((f.json_schema_extra or {}).get("desc", "")) for f in signature.fields.values())


def test_the_medical_default_keeps_the_shipped_wording():
    medical = Domain()
    assert for_domain(AnswerQuestion, medical).instructions.startswith(
        "Answer the multiple-choice medical question with the letter of the single best option.")
    assert "for a medical textbook index" in for_domain(RewriteQueries, medical).instructions
    assert "the key clinical clues stated in the question" in for_domain(RewriteQueries, medical).instructions
    assert "as medical facts, not letters" in for_domain(ContrastiveHypotheses, medical).instructions
    assert "Write a short textbook passage" in for_domain(HypotheticalDocument, medical).instructions


@pytest.mark.parametrize("signature", ALL)
def test_another_domain_leaves_no_placeholder_and_no_medical_word(signature):
    filled = text_of(for_domain(signature, Domain.named("Python standard library", "Python docstring index")))
    assert "{" not in filled.replace("${", "")
    assert not any(word in filled.lower() for word in ("medical", "clinical", "textbook"))
