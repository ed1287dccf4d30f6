"""`eval --until-decided`: the seeded questions in order, every method each, stopped as soon as every comparison
with the baseline is decided by its confidence sequence; run.json says where and why; a resumed decided run asks
nothing; `--max-questions` is the budget of an undecided one."""

from __future__ import annotations

import json

from dspy.utils import DummyLM

import hyporag
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import EvalSettings
from hyporag.lm.client import LMRoles

QUESTIONS = [{"id": f"q{i:03d}", "question": f"Which cells secrete hormone {i}?",
              "options": {"A": "Beta cells", "B": "Alpha cells"}, "answer": "A"} for i in range(60)]


def roles(cot_answer: str) -> tuple[LMRoles, DummyLM]:
    """rag reads passages and answers A (right); cot reads none and answers `cot_answer`."""
    lm = DummyLM({"(no passages)": {"answer": cot_answer}, "[1]": {"answer": "A"}})
    return LMRoles.from_lms(lm), lm


def run(tmp_path, corpus, cot_answer: str, **settings):
    rolled, lm = roles(cot_answer)
    report = hyporag.evaluate(RunConfig(methods="cot,rag", out=str(tmp_path / "run"), corpus=str(corpus), budget=2),
                              EvalSettings(until_decided=True, **settings), roles=rolled, examples=QUESTIONS,
                              progress=False)
    return report, lm


def test_a_clear_difference_stops_the_run_early_and_says_where(tiny_corpus_dir, tmp_path):
    report, lm = run(tmp_path, tiny_corpus_dir, cot_answer="B")
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    stop = record["sequential"]
    assert stop["reason"] == "every comparison decided" and 5 <= stop["stopped_at"] < 20
    assert len(lm.history) == 2 * stop["stopped_at"] and record["n"] == stop["stopped_at"]
    cot = report.report["sequential"]["comparisons"]["cot"]
    assert cot["outcome"] == "worse" and cot["by"] == "accuracy" and cot["decided_at"] == stop["stopped_at"]
    assert report.summary("cot").decided_at == stop["stopped_at"] and "coverage" not in report.report
    answered = (tmp_path / "run" / "results.jsonl").read_text().count("\n")
    again, lm_again = run(tmp_path, tiny_corpus_dir, cot_answer="B")  # resumed: decided before any question
    assert len(lm_again.history) == 0 and (tmp_path / "run" / "results.jsonl").read_text().count("\n") == answered
    assert again.report["sequential"]["comparisons"]["cot"]["outcome"] == "worse"


def test_an_undecided_run_stops_at_its_budget(tiny_corpus_dir, tmp_path):
    # both methods answer A: accuracy equal on every question, but with no log p(gold) (DummyLM gives none) the
    # lead measure never decides, so neither does the comparison: the budget ends the run
    report, lm = run(tmp_path, tiny_corpus_dir, cot_answer="A", max_questions=12)
    stop = json.loads((tmp_path / "run" / "run.json").read_text())["sequential"]
    assert stop["stopped_at"] == 12 and stop["reason"].startswith("the question list or --max-questions")
    assert report.report["sequential"]["comparisons"]["cot"]["outcome"] == "undecided" and len(lm.history) == 24


def test_the_stop_rule_needs_the_baseline(tiny_corpus_dir, tmp_path):
    import pytest

    from hyporag.foundation.errors import HyporagError

    rolled, _ = roles("A")
    with pytest.raises(HyporagError, match="compares every method with the baseline \\(rag\\)"):
        hyporag.evaluate(RunConfig(methods="cot", out=str(tmp_path / "r"), corpus=str(tiny_corpus_dir)),
                         EvalSettings(until_decided=True), roles=rolled, examples=QUESTIONS, progress=False)


def test_a_deciding_run_resumed_under_another_seed_is_refused(tiny_corpus_dir, tmp_path):
    """The seed orders the questions: resumed under another, the old rows would be read in a new order and could
    stop "decided" without a question asked."""
    import pytest

    from hyporag.foundation.errors import HyporagError

    run(tmp_path, tiny_corpus_dir, cot_answer="B")
    before = (tmp_path / "run" / "run.json").read_text()
    rolled, lm = roles("B")
    with pytest.raises(HyporagError, match=r"different seed \(seed 0 then, 1 now\)"):
        hyporag.evaluate(RunConfig(methods="cot,rag", out=str(tmp_path / "run"), corpus=str(tiny_corpus_dir),
                                   budget=2, seed=1), EvalSettings(until_decided=True), roles=rolled,
                         examples=QUESTIONS, progress=False)
    assert len(lm.history) == 0 and (tmp_path / "run" / "run.json").read_text() == before
