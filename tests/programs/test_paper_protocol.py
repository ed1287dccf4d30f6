"""The `paper` protocol under DummyLM: the steps ask for what the authors' prompts ask, in their order; HCQR's
rewriter does not see the options, retrieves B // 3 per query and sums the scores; the answer step reasons over
documents placed before the question; the hypothesis stays hidden from it."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import ClassVar

import pytest
from dspy.utils import DummyLM

from hyporag.foundation.errors import ConfigError
from hyporag.lm.client import LMRoles
from hyporag.programs import make_program
from hyporag.programs.config import ProgramConfig
from hyporag.programs.protocol import PAPER, PROTOCOLS
from tests.conftest import dummy_roles
from tests.programs.test_programs import CountingRetriever

OPTIONS = {"A": "Alpha cells", "B": "Beta cells", "C": "Hepatocytes", "D": "Osteoclasts"}
HYPOTHESIS = {"elimination": "A makes glucagon; C and D are not islet cells; B fits.",
              "discriminating_features": ["islet cell type", "hormone secreted"], "best_guess": "B",
              "best_guess_text": "Beta cells", "reasoning": "ZEBRA-REASON beta cells make insulin",
              "confirming_evidence": ["beta cells secrete insulin"], "alternative": "A"}
QUERIES = {"support_query": "beta cells secrete insulin", "distinction_query": "alpha versus beta islet cells",
           "key_features_query": "pancreatic islet hormones"}
ANSWER = {"reasoning": "The documents say beta cells secrete insulin.", "answer": "B"}


def field_order(messages) -> list[str]:
    return re.findall(r"\[\[ ## (\w+) ## \]\]", str(messages[-1]["content"]))


def run_hcqr(retriever, budget=6):
    lm = DummyLM([HYPOTHESIS, QUERIES, ANSWER])
    counting = CountingRetriever(retriever)
    program = make_program("hcqr", retriever=counting, roles=LMRoles.from_lms(lm), budget=budget, protocol=PAPER.name)
    prediction = program(question="Which cells secrete insulin?", options=OPTIONS)
    return program, prediction, lm, counting


def test_hypothesis_reasons_by_elimination_before_its_state(tiny_retriever):
    _, prediction, lm, _ = run_hcqr(tiny_retriever)
    system = str(lm.history[0]["messages"][0]["content"])
    outputs = re.findall(r"\d+\. `(\w+)`", system.split("Your output fields are:")[1].split("All interactions")[0])
    assert outputs == ["elimination", "discriminating_features", "best_guess", "best_guess_text", "reasoning",
                       "confirming_evidence", "alternative"]
    assert "option by option" in system and "Osteoclasts" in str(lm.history[0]["messages"][-1])
    assert prediction.hypothesis["likely_option"] == "B" and prediction.hypothesis["best_guess_text"] == "Beta cells"


def test_rewriter_sees_the_hypothesis_state_but_not_the_options(tiny_retriever):
    _, _, lm, _ = run_hcqr(tiny_retriever)
    rewrite = lm.history[1]["messages"]
    assert field_order(rewrite)[:2] == ["question", "hypothesis"] and "options" not in field_order(rewrite)
    text = str(rewrite[-1]["content"])
    assert "Osteoclasts" not in text and "Hepatocytes" not in text  # the other options are never shown
    for part in ("Beta cells", "ZEBRA-REASON", "beta cells secrete insulin", "islet cell type"):
        assert part in text


@pytest.mark.parametrize("mode", ["hybrid", "bm25"])
def test_per_query_k_is_budget_over_three_and_scores_are_summed(bm25_retriever, mode):
    bm25_retriever.mode = mode  # BM25 alone: the sum of min-max-normalised scores, on each engine
    program, prediction, _, counting = run_hcqr(bm25_retriever, budget=6)
    assert program.per_query_k == 2 and program.merge_policy == "sum"
    assert counting.queries == [list(QUERIES.values())]
    lists = bm25_retriever.search_many(list(QUERIES.values()), 2)
    from hyporag.retrieval import merge_to_budget

    expected = merge_to_budget(lists, 6, "sum", normalize=mode == "bm25")
    assert expected and len({h.id for h in expected}) == len(expected)
    assert [p["id"] for p in prediction.passages] == [h.id for h in expected]
    assert program.settings()["protocol"] == PAPER.name and program.settings()["reasoning"] is True


def test_answer_reasons_over_documents_placed_first_and_never_sees_the_hypothesis(tiny_retriever):
    _, prediction, lm, _ = run_hcqr(tiny_retriever)
    answer = lm.history[-1]["messages"]
    assert field_order(answer)[:3] == ["context", "question", "options"]
    assert "reasoning" in str(answer[0]["content"]) and prediction.answer == "B"
    assert "ZEBRA-REASON" not in str(answer)


def test_fast_protocol_is_unchanged_and_chr_speaks_as_a_specialist(tiny_retriever):
    fast = make_program("hcqr", retriever=tiny_retriever, budget=6)
    assert (fast.per_query_k, fast.merge_policy, fast.answer.reasoning) == (6, "round_robin", False)
    lm = DummyLM([{"target_hypothesis": "Beta cells secrete insulin.", "mimic_hypothesis": "Alpha cells secrete "
                   "glucagon."}, ANSWER])
    program = make_program("chr", retriever=tiny_retriever, roles=LMRoles.from_lms(lm), budget=3, protocol=PAPER.name)
    program(question="Which cells secrete insulin?", options=OPTIONS)
    assert "You are a medical specialist" in str(lm.history[0]["messages"][0]["content"])
    assert program.schedule.kind == "fixed" and program.schedule.lam == 1.0  # the paper's default λ


def test_ablations_run_under_either_protocol(tiny_retriever):
    for protocol in PROTOCOLS:
        program = make_program("hcqr-no-support", retriever=tiny_retriever, budget=6, protocol=protocol)
        assert program.queries == ("distinction", "key_features")
        assert program.per_query_k == (3 if protocol == PAPER.name else 6)  # B // 2 queries under paper
        shown = make_program("hcqr-show-hypothesis", retriever=tiny_retriever, protocol=protocol)
        assert shown.show_hypothesis and shown.config.protocol == protocol


def test_a_methods_own_protocol_rules_sit_beside_it_and_the_manifest_records_them_all():
    """The protocol object holds the shared steps' rules; HCQR's and CHR's live on their configs and the engine's in
    the LM layer; a program's record (what the artifact manifest stores) has all three; a method that declares no
    rules for a protocol is refused at construction, in one line."""
    assert {f.name for f in fields(PAPER)} == {"name", "answer_reasons", "documents_first"}
    roles = dummy_roles([ANSWER])
    record = make_program("hcqr", retriever=CountingRetriever(None), roles=roles, protocol="paper").protocol_record()
    assert record["hypothesis_by_elimination"] is True and record["merge"] == "sum"
    assert record["local_adapter"] == "json" and record["caps_engine_output"] is False and record["documents_first"]
    fast = make_program("chr", retriever=CountingRetriever(None), roles=roles).protocol_record()
    assert fast["specialist_hypotheses"] is False and fast["local_adapter"] == "lean"

    @dataclass(frozen=True)
    class FastOnly(ProgramConfig):
        method: ClassVar[str] = "fast-only"
        protocol_rules: ClassVar[dict] = {"fast": object()}

    FastOnly()
    with pytest.raises(ConfigError, match="fast-only: no rules declared for protocol 'paper'"):
        FastOnly(protocol="paper")
