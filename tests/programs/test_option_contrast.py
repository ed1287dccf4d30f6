"""option-contrast: one weighted query per option against the others, B split evenly, the answer call only."""

from __future__ import annotations

import pytest
from dspy.utils import DummyLM

from hyporag.foundation.errors import ConfigError
from hyporag.lm.client import LMRoles
from hyporag.programs import make_program
from tests.conftest import dummy_roles
from tests.programs.test_programs import CountingRetriever

OPTIONS = {"A": "Alpha cells", "B": "Beta cells", "C": "Osteoclasts", "D": "Thyroid"}
QUESTION = "Which cells secrete insulin?"


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_one_passage_per_option_at_b4_and_only_the_answer_call(tiny_retriever, mode):
    lm = DummyLM([{"answer": "B"}])
    counting = CountingRetriever(tiny_retriever)
    program = make_program("option-contrast", retriever=counting, roles=LMRoles.from_lms(lm), budget=4, mode=mode)
    prediction = program(question=QUESTION, options=OPTIONS)
    assert prediction.answer == "B" and len(lm.history) == 1 and prediction.cost["calls"] == 1
    assert counting.calls == 1  # the four option queries in one batch
    assert prediction.queries == [f"{QUESTION} {text}" for text in OPTIONS.values()]
    assert len(prediction.passages) == 4 and len({p["id"] for p in prediction.passages}) == 4
    assert prediction.hypothesis is None and prediction.retrieval_sees_options is True


def test_each_options_own_passage_comes_back_on_bm25(tiny_retriever):
    roles = dummy_roles([{"answer": "B"}])
    program = make_program("option-contrast", retriever=tiny_retriever, roles=roles, budget=4, mode="bm25")
    contents = " ".join(p["contents"].lower() for p in program(question=QUESTION, options=OPTIONS).passages)
    assert all(text.lower().split()[0] in contents for text in OPTIONS.values())  # alpha, beta, osteoclasts, thyroid


def test_contrast_lam_zero_is_each_options_query_alone(tiny_retriever):
    roles = dummy_roles([{"answer": "A"}])
    program = make_program("option-contrast", retriever=tiny_retriever, roles=roles, budget=4, mode="dense",
                           contrast_lam=0.0)
    ids = [p["id"] for p in program(question=QUESTION, options=OPTIONS).passages]
    firsts = [tiny_retriever.search(f"{QUESTION} {t}", 4, mode="dense") for t in OPTIONS.values()]
    expected: list[str] = []
    for rank in range(4):  # round robin over the options' lists, first occurrence wins, cut to B
        for hits in firsts:
            if len(hits) > rank and hits[rank].id not in expected:
                expected.append(hits[rank].id)
    assert ids == expected[:4]


def test_question_only_and_a_negative_lambda_are_refused(tiny_retriever):
    with pytest.raises(ConfigError, match="cannot run question-only"):
        make_program("option-contrast", retriever=tiny_retriever, retrieval_sees_options=False)
    with pytest.raises(ConfigError, match="contrast_lam must be a number >= 0"):
        make_program("option-contrast", retriever=tiny_retriever, contrast_lam=-1.0)
