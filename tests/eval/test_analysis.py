"""Paired test, DUR, utility-conditioned accuracy, overlap, evidence, CI gate and JUnit output."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from dspy.utils import DummyLM

from hyporag.eval import paper_analyses as analysis
from hyporag.eval.ci_gate import check_bars, parse_bars, write_junit
from hyporag.eval.evidence import option_evidence
from hyporag.eval.mcnemar import mcnemar_exact, paired_comparison
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.evaluate import run_evaluation
from hyporag.lm.client import LMRoles
from hyporag.programs import make_program
from hyporag.programs.judge import ContextJudge


def test_mcnemar_exact_values():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 0) == pytest.approx(2 / 32)
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(10, 1) == pytest.approx(2 * 12 / 2048)


def test_paired_comparison_uses_shared_questions_only():
    result = paired_comparison({"a": True, "b": True, "c": False}, {"a": False, "b": True, "d": True})
    assert result["n"] == 2 and result["a_only"] == 1 and result["b_only"] == 0 and result["difference"] == 0.5


def row(q, m, correct, label=None, ids=()):
    return {"question_id": q, "method": m, "correct": correct, "judge_label": label, "passage_ids": list(ids)}


def test_dur_and_utility_conditioned_accuracy():
    rows = [row("1", "cot", False), row("2", "cot", True), row("1", "rag", True, "Entailed", ["x"]),
            row("2", "rag", False, "NotUseful", ["y"])]
    assert analysis.dur(rows)["rag"] == {"judged": 2, "Entailed": 1, "Useful": 0, "NotUseful": 1, "dur": 0.5}
    uca = analysis.utility_conditioned_accuracy(rows)["rag"]
    assert uca["Entailed"]["delta_vs_cot"] == 1.0 and uca["NotUseful"]["delta_vs_cot"] == -1.0


def test_overlap_only_on_disagreements():
    rows = [row("1", "a", True, ids=["p1", "p2"]), row("1", "b", False, ids=["p2", "p3"]),
            row("2", "a", True, ids=["p9"]), row("2", "b", True, ids=["p8"])]
    (overlap,) = analysis.disagreement_overlap(rows)
    assert overlap["disagreements"] == 1 and overlap["mean_jaccard"] == pytest.approx(1 / 3)


def test_option_evidence_matches_words_not_fragments():
    options = {"A": "Insulin", "B": "Glucagon", "C": "Gas"}
    found = option_evidence(options, "A", ["Beta cells secrete INSULIN.", "Gastrin is a hormone."])
    assert found == {"gold_in_context": True, "distractor_in_context": False}


def test_ci_gate_and_junit(tmp_path):
    summary = [{"method": "rag", "accuracy": 0.5, "n": 4, "ci95_low": 0.1, "ci95_high": 0.9, "seconds_per_q": 1.0}]
    bars = parse_bars(["rag=0.6", "chr=0.1"])
    assert check_bars(summary, bars) == ["rag: accuracy 0.500 < 0.600", "chr: not in this run"]
    write_junit(tmp_path / "j.xml", summary, bars, "suite")
    suite = ET.parse(tmp_path / "j.xml").getroot()
    assert suite.get("tests") == "2" and suite.get("failures") == "2"
    with pytest.raises(HyporagError, match="METHOD=ACCURACY"):
        parse_bars(["rag=high"])


def test_judge_labels_each_context_once(tiny_retriever, tiny_questions, tmp_path):
    answer_lm = DummyLM([{"answer": "B"}] * 3)
    judge_lm = DummyLM([{"label": "Useful", "reason": "mentions beta cells"}] * 3)
    roles = LMRoles.from_lms(answer_lm, judge=judge_lm)
    program = make_program("rag", retriever=tiny_retriever, roles=roles, budget=2)
    report = run_evaluation({"rag": program}, tiny_questions, tmp_path / "run", {"dataset": "t"}, progress=False,
                            judge=ContextJudge(roles.judge))
    assert len(judge_lm.history) == 3
    assert report["dur"]["rag"]["Useful"] == 3 and report["methods"][0]["dur"] == 1.0
    assert (tmp_path / "run" / "dur.png").is_file()
    judge_cost = report["cost_by_role"]["rag"]["judge"]
    assert judge_cost["calls"] == 1.0 and judge_cost["seconds"] > 0


def test_overlap_reports_share_with_no_shared_passage():
    rows = [row("1", "a", True, ids=["p1"]), row("1", "b", False, ids=["p2"]),
            row("2", "a", False, ids=["p3"]), row("2", "b", True, ids=["p3"])]
    (overlap,) = analysis.disagreement_overlap(rows)
    assert overlap["disagreements"] == 2 and overlap["no_shared"] == 0.5
    # the CHR paper's case: b right where a is wrong (question 2 only; its lists share p3)
    assert overlap["b_right_cases"] == 1 and overlap["b_right_no_shared"] == 0.0
    assert overlap["b_right_mean_jaccard"] == 1.0
    assert overlap["a_right_cases"] == 1 and overlap["a_right_no_shared"] == 1.0


def test_cost_by_role_includes_the_judge_and_adds_up_per_question():
    rows = [{**row("1", "chr", True, "Useful", ["x"]), "judge_calls": 1, "judge_input_tokens": 900,
             "judge_output_tokens": 40, "judge_seconds": 3.0,
             "cost_by_role": {"hypothesis": {"calls": 1, "input_tokens": 400, "output_tokens": 60, "seconds": 5.0,
                                             "processed_tokens": 150},
                              "answer": {"calls": 1, "input_tokens": 800, "output_tokens": 10, "seconds": 2.0}}},
            {**row("2", "chr", False, "NotUseful", ["y"]),  # served from the cache: no calls, no judge cost
             "cost_by_role": {"answer": {"calls": 0, "input_tokens": 0, "output_tokens": 0, "seconds": 0.1}}}]
    costs = analysis.cost_by_role(rows)["chr"]
    assert costs["hypothesis"] == {"calls": 0.5, "input_tokens": 200, "output_tokens": 30, "seconds": 2.5,
                                   "processed_tokens": 75}
    assert costs["answer"]["calls"] == 0.5 and costs["judge"]["input_tokens"] == 450
    # a call that did not report its prompt cache leaves the processed count unknown, never zero
    assert costs["answer"]["processed_tokens"] is None and costs["judge"]["processed_tokens"] is None
    assert costs["judge"]["seconds"] == 1.5


def test_mechanism_counts_followed_and_overturned_hypotheses():
    from hyporag.eval.paper_analyses import mechanism
    from hyporag.programs.hypothesis import option_named_in, option_of_letter

    options = {"A": "Alpha cells", "B": "Beta cells", "C": "Hepatocytes"}
    assert option_of_letter("b", options) == "B" and option_of_letter("E", options) is None
    assert option_named_in("Beta cells secrete insulin.", options) == "B"
    assert option_named_in("Alpha cells or beta cells", options) is None  # names two: unknown
    rows = [
        {"question_id": "1", "method": "hcqr", "gold": "B", "answer": "B", "correct": True, "hypothesis_option": "B"},
        {"question_id": "2", "method": "hcqr", "gold": "B", "answer": "A", "correct": False, "hypothesis_option": "A"},
        {"question_id": "3", "method": "hcqr", "gold": "C", "answer": "C", "correct": True, "hypothesis_option": "A"},
        {"question_id": "4", "method": "hcqr", "gold": "C", "answer": "A", "correct": False, "hypothesis_option": "A"},
        {"question_id": "1", "method": "rag", "gold": "B", "answer": "B", "correct": True},
    ]
    m = mechanism(rows)
    assert set(m) == {"hcqr"}
    assert m["hcqr"] == {"n": 4, "hypothesis_gold": 0.25, "answer_follows": 0.75, "wrong_hypotheses": 3,
                         "overturned_to_gold": 1 / 3}
