"""Rerank-RAG with a cross-encoder: a tiny BERT cross-encoder built here from a config (random weights), loaded
by name like a hub model would be; the pool is re-sorted by its scores and no LM judgment is asked for."""

from __future__ import annotations

import pytest
from dspy.utils import DummyLM

from hyporag.foundation.errors import ModelError
from hyporag.lm.client import LMRoles
from hyporag.programs import make_program
from tests.conftest import dummy_roles


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    directory = tmp_path_factory.mktemp("cross-encoder")
    words = ["insulin", "beta", "cells", "alpha", "glucagon", "pancreas", "liver", "kidney", "bone", "heart",
             "secrete", "which"]
    (directory / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    BertTokenizer(str(directory / "vocab.txt")).save_pretrained(directory)
    config = BertConfig(vocab_size=5 + len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=128, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(directory)
    return str(directory)


def test_cross_encoder_reranks_the_pool_without_an_lm_call(tiny_retriever, tiny_cross_encoder):
    lm = DummyLM([{"answer": "B"}])
    program = make_program("rerank", retriever=tiny_retriever, roles=LMRoles.from_lms(lm), budget=2,
                           cross_encoder=tiny_cross_encoder)
    prediction = program(question="Which cells secrete insulin?", options={"A": "Alpha cells", "B": "Beta cells"})
    assert len(lm.history) == 1 and prediction.answer == "B"  # the answer only: no LM rerank judgment
    pool = tiny_retriever.search("Which cells secrete insulin?", 4)
    scored = program.reranker("Which cells secrete insulin?", pool)
    assert sorted(h.id for h in scored) == sorted(h.id for h in pool)
    assert [h.score for h in scored] == sorted((h.score for h in scored), reverse=True)
    assert [p["id"] for p in prediction.passages] == [h.id for h in scored[:2]]
    assert program.settings()["cross_encoder"] == tiny_cross_encoder


def test_a_cross_encoder_that_cannot_load_is_one_line(tiny_retriever, tmp_path):
    program = make_program("rerank", retriever=tiny_retriever, roles=dummy_roles([]), budget=2,
                           cross_encoder=str(tmp_path / "no-such-model"))
    with pytest.raises(ModelError, match="cannot be loaded"):
        program(question="Which cells secrete insulin?", options={"A": "Alpha cells", "B": "Beta cells"})
