"""Programs under DummyLM: exact LM and retrieval call counts, hidden hypothesis, budget, dedup, ablations."""

from __future__ import annotations

import dspy
import pytest
from dspy.utils import DummyLM

from hyporag.lm.client import LMRoles
from hyporag.programs import make_program
from hyporag.programs.registry import METHODS
from tests.conftest import CONTRAST

HYPOTHESIS = {"likely_option": "B", "discriminating_features": ["beta cells", "islets"],
              "expected_evidence": "beta cells secrete insulin", "rationale": "ZEBRA-RATIONALE"}
QUERIES = {"support_query": "beta cells secrete insulin", "distinction_query": "alpha cells glucagon",
           "key_features_query": "pancreatic islets"}
ANSWER = {"answer": "B"}

SCRIPTS = {
    "cot": [ANSWER],
    "rag": [ANSWER],
    "rerank": [{"useful_passages": [2, 1]}, ANSWER],
    "rewrite": [{"queries": ["insulin secreting cells", "pancreatic islet hormone", "beta cell function"]}, ANSWER],
    "rewrite+options": [{"queries": ["insulin cells", "islets", "beta cells"]}, ANSWER],
    "rewrite-single": [{"query": "insulin secreting cells"}, ANSWER],
    "rewrite-single+options": [{"query": "insulin secreting cells"}, ANSWER],
    "hyde": [{"passage": "Beta cells in pancreatic islets secrete insulin."}, ANSWER],
    "q2d": [{"pseudo_document": "Insulin is made by beta cells."}, ANSWER],
    "hcqr": [HYPOTHESIS, QUERIES, ANSWER],
    "hcqr-no-support": [HYPOTHESIS, QUERIES, ANSWER],
    "hcqr-no-distinction": [HYPOTHESIS, QUERIES, ANSWER],
    "hcqr-no-key-features": [HYPOTHESIS, QUERIES, ANSWER],
    "hcqr-no-options": [HYPOTHESIS, QUERIES, ANSWER],
    "hcqr-show-hypothesis": [HYPOTHESIS, QUERIES, ANSWER],
    "chr": [CONTRAST, ANSWER],
    "chr-linear": [CONTRAST, ANSWER],
    "chr-threshold": [CONTRAST, ANSWER],
    "chr-sigmoid": [CONTRAST, ANSWER],
    "option-contrast": [ANSWER],  # retrieval per option, one answer call
}
SEARCHES = {"cot": 0, "hcqr": 1, "hcqr-no-support": 1}  # HCQR (and multi-query rewrite) search in ONE batch


class CountingRetriever:
    """Wraps a retriever and counts every search entry point."""

    def __init__(self, inner):
        self.inner, self.calls, self.queries = inner, 0, []

    def __getattr__(self, name):
        attr = getattr(self.inner, name)
        if not name.startswith("search"):
            return attr

        def counted(*args, **kwargs):
            self.calls += 1
            self.queries.append(args[0])
            return attr(*args, **kwargs)

        return counted


def run(method, retriever, budget=3, **kwargs):
    lm = DummyLM(SCRIPTS[method])
    counting = CountingRetriever(retriever)
    program = make_program(method, retriever=counting, roles=LMRoles.from_lms(lm), budget=budget, **kwargs)
    prediction = program(question="Which cells secrete insulin?",
                         options={"A": "Alpha cells", "B": "Beta cells", "C": "Hepatocytes", "D": "Osteoclasts"})
    return prediction, lm, counting


def test_every_registered_method_has_a_contract_script():
    """The contract below runs over the registry itself: a method registered without a script here fails."""
    assert sorted(METHODS) == sorted(SCRIPTS)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_method_makes_exactly_its_calls(method, tiny_retriever):
    prediction, lm, counting = run(method, tiny_retriever)
    assert prediction.answer == "B" and not prediction.parse_failure
    assert len(lm.history) == len(SCRIPTS[method])
    assert prediction.cost["calls"] == len(SCRIPTS[method])
    assert counting.calls == SEARCHES.get(method, 1)
    assert len(prediction.passages) <= 3
    assert len({p["id"] for p in prediction.passages}) == len(prediction.passages)
    entry = METHODS[method]
    if entry.program.uses_retrieval:  # the method's own rule: its preset, else its program's default
        expected = entry.preset.get("retrieval_sees_options", entry.program.default_sees_options)
        assert prediction.passages and prediction.retrieval_sees_options is expected


def test_hcqr_hides_hypothesis_from_answer_prompt(tiny_retriever):
    _, lm, _ = run("hcqr", tiny_retriever)
    answer_prompt = str(lm.history[-1]["messages"])
    assert "ZEBRA-RATIONALE" not in answer_prompt
    rewrite_prompt = str(lm.history[1]["messages"])  # the fast rewrite reads the state, not the rationale
    assert "Features: beta cells; islets" in rewrite_prompt and "ZEBRA-RATIONALE" not in rewrite_prompt


def test_show_hypothesis_ablation_reveals_it(tiny_retriever):
    _, lm, _ = run("hcqr-show-hypothesis", tiny_retriever)
    assert "ZEBRA-RATIONALE" in str(lm.history[-1]["messages"])


def test_hcqr_issues_the_selected_queries_in_one_batch(tiny_retriever):
    prediction, _, counting = run("hcqr", tiny_retriever, budget=5)
    assert counting.queries[0] == list(QUERIES.values())
    assert prediction.queries == list(QUERIES.values())
    prediction, _, counting = run("hcqr-no-distinction", tiny_retriever)
    assert counting.queries[0] == [QUERIES["support_query"], QUERIES["key_features_query"]]


def test_hcqr_options_ablation_hides_options_from_hypothesis(tiny_retriever):
    prediction, lm, _ = run("hcqr-no-options", tiny_retriever)
    assert prediction.retrieval_sees_options is False
    assert "Osteoclasts" not in str(lm.history[0]["messages"])
    prediction, lm, _ = run("hcqr", tiny_retriever)
    assert prediction.retrieval_sees_options is True
    assert "Osteoclasts" in str(lm.history[0]["messages"])


def test_rag_question_only_by_default(tiny_retriever):
    prediction, _, counting = run("rag", tiny_retriever)
    assert counting.queries == ["Which cells secrete insulin?"] and prediction.retrieval_sees_options is False
    prediction, _, counting = run("rag", tiny_retriever, retrieval_sees_options=True)
    assert "Osteoclasts" in counting.queries[0]


def test_budget_caps_context_for_every_program(tiny_retriever):
    for method in ("rag", "hcqr", "chr", "rerank"):
        prediction, _, _ = run(method, tiny_retriever, budget=2)
        assert len(prediction.passages) <= 2


def test_chr_records_lambda_and_hypotheses(tiny_retriever):
    prediction, _, counting = run("chr-linear", tiny_retriever)
    assert prediction.hypothesis["target"] == CONTRAST["target_hypothesis"]
    assert 0.0 <= prediction.hypothesis["lambda"] <= 1.0 and prediction.hypothesis["similarity"] is not None


def test_unparseable_answer_is_a_counted_parse_failure(tiny_retriever):
    lm = DummyLM([{"answer": "Z"}] * 3)
    program = make_program("cot", roles=LMRoles.from_lms(lm))
    with dspy.context(adapter=dspy.ChatAdapter()):
        prediction = program(question="Q?", options={"A": "x", "B": "y"})
    assert prediction.answer is None and prediction.parse_failure
    assert prediction.answer_reply is not None and "Z" in prediction.answer_reply  # kept, for the viewer


def test_retrieval_program_without_retriever_is_a_clear_error():
    with pytest.raises(ValueError, match="needs a retriever"):
        make_program("rag", retriever=None)


def test_unparseable_hypothesis_falls_back_to_the_question(tiny_retriever):
    lm = DummyLM([{"nonsense": "x"}] * 4 + [ANSWER])  # ChatAdapter retries each failed parse once as JSON
    counting = CountingRetriever(tiny_retriever)
    program = make_program("hcqr", retriever=counting, roles=LMRoles.from_lms(lm), budget=3)
    prediction = program(question="Which cells secrete insulin?", options={"A": "Alpha cells", "B": "Beta cells"})
    assert prediction.answer == "B" and prediction.fallbacks == {"query": 2}
    assert prediction.queries == ["Which cells secrete insulin?"] * 3


@pytest.mark.parametrize(("mimic", "reason"), [
    ("beta cells secrete insulin", "identical"),
    ("Beta cells of the pancreatic islets secrete insulin in response to high glucose.", "near-identical"),
    ("", "no mimic"),
])
def test_degenerate_contrast_falls_back_to_the_target_and_is_counted(tiny_retriever, tmp_path, tiny_questions,
                                                                     mimic, reason):
    target = ("Beta cells secrete insulin." if reason == "identical"
              else "Beta cells of the pancreatic islets secrete insulin in response to glucose.")
    lm = DummyLM([{"target_hypothesis": target, "mimic_hypothesis": mimic}, ANSWER])
    counting = CountingRetriever(tiny_retriever)
    program = make_program("chr", retriever=counting, roles=LMRoles.from_lms(lm), budget=3, mode="hybrid")
    prediction = program(question="Which cells secrete insulin?", options={"A": "Alpha cells", "B": "Beta cells"})
    assert prediction.fallbacks["contrast"].startswith(reason)
    assert counting.queries == [target]  # one plain search with H+, no contrastive search
    assert [p["id"] for p in prediction.passages] == [h.id for h in tiny_retriever.search(target, 3, mode="hybrid")]

    from hyporag.jobs.evaluate import run_evaluation

    lm = DummyLM([{"target_hypothesis": target, "mimic_hypothesis": mimic}, ANSWER] * 3)
    program = make_program("chr", retriever=tiny_retriever, roles=LMRoles.from_lms(lm), budget=3, mode="hybrid")
    report = run_evaluation({"chr": program}, tiny_questions, tmp_path / "run", {"dataset": "t"}, progress=False)
    assert report["methods"][0]["fallbacks"] == {"contrast": 3}
    assert "| contrast 3 |" in (tmp_path / "run" / "summary.md").read_text()  # the fallbacks column


def test_distinct_hypotheses_are_not_a_fallback(tiny_retriever):
    prediction, _, counting = run("chr", tiny_retriever)
    assert "contrast" not in prediction.fallbacks
    assert prediction.hypothesis["similarity"] < 0.95


def test_parse_rule_scores_an_unparseable_answer_and_always_counts_it():
    for parse, expected in (("strict", None), ("mirage", "A")):
        lm = DummyLM([{"answer": "Z"}] * 3)
        program = make_program("cot", roles=LMRoles.from_lms(lm), parse=parse)
        with dspy.context(adapter=dspy.ChatAdapter()):
            prediction = program(question="Q?", options={"A": "x", "B": "y"})
        assert prediction.answer == expected and prediction.parse_failure
        assert program.settings()["parse"] == parse  # recorded in every run and artifact


def test_multi_query_rewrite_searches_three_rephrasings_b_over_3_each(tiny_retriever):
    prediction, lm, counting = run("rewrite", tiny_retriever, budget=6)
    assert len(lm.history) == 2 and counting.calls == 1  # one rephrasing call, one batched search
    assert counting.queries[0] == SCRIPTS["rewrite"][0]["queries"]
    assert prediction.queries == SCRIPTS["rewrite"][0]["queries"] and len(prediction.passages) <= 6
    assert "Rephrase the medical question as three" in str(lm.history[0]["messages"])
