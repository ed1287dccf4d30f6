"""The reader's option probabilities from the answer call itself: row fields over an OpenAI-compatible server that
returns logprobs (and one that returns none: "–", never an estimate), cached calls keeping them, the paired
statistics and context lift, and the properties every distribution must have."""

from __future__ import annotations

import math

import dspy
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hyporag
from hyporag.eval import decision
from hyporag.eval.belief import decision_measures
from hyporag.eval.run_report import markdown
from hyporag.jobs.run_config import RunConfig
from hyporag.lm.option_probs import letter_logprobs
from hyporag.testing import fake_openai

QUESTIONS = [{"id": f"q{i}", "question": f"Which organ makes hormone {i}?",
              "options": {"A": "Pancreas", "B": "Kidney", "C": "Liver", "D": "Heart"}, "answer": "AB"[i % 2]}
             for i in range(4)]
BELIEF = {"A": -0.2, " A": -3.0, "B": -2.0, "C": -4.0, "D": -5.5, "The": -1.0}


def evaluate(base: str, out, cache: bool = False):
    return hyporag.evaluate(RunConfig(methods="cot", out=str(out), lm="openai/m", api_base=base, api_key="k",
                                      no_cache=not cache), examples=QUESTIONS, progress=False)


def test_rows_carry_the_readers_option_probabilities_from_the_same_call(tmp_path):
    with fake_openai(["m"], letter_logprobs=BELIEF) as server:
        report = evaluate(server.base(), tmp_path / "run")
        assert server.completions == len(QUESTIONS)  # no extra call
        assert all(body.get("logprobs") and body.get("top_logprobs") == 20 for body in server.bodies)
    rows = {r["question_id"]: r for r in hyporag.eval.results_store.read_results(tmp_path / "run")}
    probs = rows["q0"]["option_logprobs"]
    assert rows["q0"]["option_logprob_status"] == "ok"
    assert math.isclose(sum(math.exp(v) for v in probs.values()), 1.0, abs_tol=1e-6)
    a = math.log(math.exp(-0.2) + math.exp(-3.0))  # "A" and " A" are one option
    assert probs["A"] > probs["B"] and math.isclose(probs["A"] - probs["B"], a + 2.0, abs_tol=1e-5)
    assert rows["q0"]["margin"] > 0 and rows["q1"]["margin"] < 0  # gold A, then gold B; the reader says A
    assert math.isclose(rows["q1"]["p_gold"], math.exp(probs["B"]), rel_tol=1e-5)
    summary = report.summary("cot")
    assert summary["with_probabilities"] == 4 and summary["p_gold"] is not None


def test_a_backend_without_logprobs_records_that_and_reports_a_dash(tmp_path):
    with fake_openai(["m"]) as server:  # answers, but returns no logprobs
        report = evaluate(server.base(), tmp_path / "run")
    rows = hyporag.eval.results_store.read_results(tmp_path / "run")
    assert {r["option_logprob_status"] for r in rows} == {"none"} and {r["p_gold"] for r in rows} == {None}
    assert report.summary("cot")["p_gold"] is None
    assert "Option probabilities: none in this run" in markdown(report.report)


def test_a_model_that_refuses_logprobs_is_asked_again_without_them(tmp_path):
    with fake_openai(["m"]) as server:
        server.refuse_logprobs = True
        report = evaluate(server.base(), tmp_path / "run")
        assert server.completions == len(QUESTIONS) + 1  # refused once, then never asked for them again
    rows = hyporag.eval.results_store.read_results(tmp_path / "run")
    assert all(r["error"] is None and r["answer"] == "A" for r in rows) and report.accuracy("cot") == 0.5
    assert {r["option_logprob_status"] for r in rows} == {"none"}


def test_a_cached_answer_keeps_its_logprobs(tmp_path):
    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=False, disk_cache_dir=str(tmp_path / "c"))
    with fake_openai(["m"], letter_logprobs=BELIEF) as server:
        evaluate(server.base(), tmp_path / "a", cache=True)
        again = evaluate(server.base(), tmp_path / "b", cache=True)
        assert server.completions == len(QUESTIONS)  # the second run came from the cache
    rows = hyporag.eval.results_store.read_results(tmp_path / "b")
    assert {r["option_logprob_status"] for r in rows} == {"ok"} and again.summary("cot")["with_probabilities"] == 4


def test_a_letter_outside_the_top_k_gives_no_estimate():
    content = {"content": [{"token": "B", "logprob": -0.1, "top_logprobs": [{"token": "B", "logprob": -0.1},
                                                                           {"token": "A", "logprob": -2.5}]}]}
    probs, status = letter_logprobs(content, ["A", "B", "C"], "B")
    assert status == "partial" and probs["C"] is None
    assert decision_measures(probs, status, "B") == {"log_p_gold": None, "p_gold": None, "margin": None,
                                                      "entropy": None}
    assert letter_logprobs(None, ["A", "B"], "A") == (None, "none")
    assert letter_logprobs(content, ["A", "B"], None) == (None, "unparsed")


@given(st.lists(st.floats(-30, 0), min_size=2, max_size=6), st.data())
def test_probabilities_sum_to_one_and_the_margin_sign_is_the_argmax(logprobs, data):
    letters = "ABCDEF"[:len(logprobs)]
    chosen = letters[int(np.argmax(logprobs))]  # greedy: the sampled letter is the most probable one
    gold = data.draw(st.sampled_from(letters))
    top = [{"token": letter, "logprob": value} for letter, value in zip(letters, logprobs, strict=True)]
    probs, status = letter_logprobs({"content": [{"token": chosen, "logprob": max(logprobs), "top_logprobs": top}]},
                                    list(letters), chosen)
    assert status == "ok" and math.isclose(sum(math.exp(v) for v in probs.values()), 1.0, abs_tol=1e-5)
    margin = decision_measures(probs, status, gold)["margin"]
    if sorted(logprobs)[-1] - sorted(logprobs)[-2] > 1e-4:  # a clear argmax
        assert (margin > 0) == (gold == chosen)


def rows_of(method: str, log_p: list[float], correct: list[bool]) -> list[dict]:
    return [{"question_id": f"q{i}", "method": method, "answer": "A" if ok else "B", "gold": "A", "correct": ok,
             "option_logprob_status": "ok", "option_logprobs": {"A": lp, "B": math.log1p(-math.exp(lp))},
             **decision_measures({"A": lp, "B": math.log1p(-math.exp(lp))}, "ok", "A")}
            for i, (lp, ok) in enumerate(zip(log_p, correct, strict=True))]


def test_paired_statistics_lift_and_power():
    rng = np.random.default_rng(0)
    base = list(np.log(rng.uniform(0.05, 0.6, 80)))
    better = [min(-1e-3, v + 0.4 + rng.normal(0, 0.2)) for v in base]
    rows = (rows_of("rag", base, [v > math.log(0.5) for v in base]) +
            rows_of("chr", better, [v > math.log(0.5) for v in better]) +
            rows_of("cot", [v - 0.3 for v in base], [False] * 80))
    paired = decision.paired_measures(rows, "rag", seed=1)["chr"]
    lead = paired[decision.LEAD]
    assert lead["n"] == 80 and 0.2 < lead["mean"] < 0.6 and lead["ci95_low"] > 0 and lead["wilcoxon_p"] < 1e-6
    assert lead["n_for_power"] < 80 and paired["accuracy"]["n"] == 80
    assert decision.paired_measures(rows, "rag", seed=1) == decision.paired_measures(rows, "rag", seed=1)  # seeded
    lift = decision.context_lift(rows, "cot")
    assert lift["rag"]["positive"] == 1.0 and lift["chr"]["mean"] > lift["rag"]["mean"] > 0
    assert decision.context_lift([r for r in rows if r["method"] != "cot"], "cot") == {}


@pytest.mark.parametrize(("a_only", "b_only", "n"), [(10, 5, 100), (20, 10, 100)])
def test_mcnemar_power_grows_as_the_discordance_evens_out(a_only, b_only, n):
    needed = decision.questions_for_power_mcnemar(a_only, b_only, n)
    assert needed > n * 0.5 and decision.questions_for_power_mcnemar(5, 5, n) is None


def test_the_page_shows_each_methods_option_probabilities_and_sorts_by_lift(tmp_path):
    import time

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from tests.eval.test_viewer import chromium

    rows = (rows_of("cot", [-2.0, -0.5, -1.0], [False, True, False]) +
            rows_of("rag", [-0.2, -0.6, -3.0], [True, True, False]))
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.jsonl").write_text("".join(__import__("json").dumps(r) + "\n" for r in rows))
    (out / "run.json").write_text('{"dataset": "t", "methods": ["cot", "rag"], "n": 3}')
    questions = {f"q{i}": {"question": f"Question {i}?", "options": {"A": "x", "B": "y"}} for i in range(3)}
    page = hyporag.write_view([out], questions=questions)
    browser = chromium()
    try:
        browser.get(page.as_uri())
        Select(browser.find_element(By.ID, "f-lift")).select_by_visible_text("rag")
        shown = [tr.get_attribute("data-id") for tr in browser.find_elements(By.CSS_SELECTOR, "tr.question")]
        assert shown == ["q0", "q1", "q2"]  # lifts +1.8, -0.1, -2.0: the largest first
        browser.get(page.as_uri() + "#r=0&q=q0")
        time.sleep(0.3)
        bars = browser.find_elements(By.CSS_SELECTOR, '#columns .column[data-method="rag"] .bar')
        assert [b.text.split()[0] for b in bars] == ["A", "B"] and "0.82" in bars[0].text  # exp(-0.2)
        assert "gold" in bars[0].get_attribute("class")
    finally:
        browser.quit()


def test_objectives_score_the_readers_belief_and_accuracy_stays_first():
    from hyporag.cli import build_parser
    from hyporag.cli.common import load_settings
    from hyporag.eval.dspy_metrics import accuracy, objective_metric
    from hyporag.foundation.errors import ConfigError
    from hyporag.jobs.settings import FitSettings, TuneSettings

    example = dspy.Example(question="Q?", options={"A": "x", "B": "y"}, answer="A")

    def said(answer, log_a):
        probs = {"A": log_a, "B": math.log1p(-math.exp(log_a))}
        return dspy.Prediction(answer=answer, option_logprobs=probs, option_logprob_status="ok")

    tie = objective_metric("accuracy", accuracy)
    assert tie(example, said("A", -0.1)) > tie(example, said("A", -0.6)) >= 1.0  # ties broken by belief
    assert tie(example, said("B", -0.8)) < 0.01 < tie(example, said("A", -0.69))  # never outweighs a question
    assert tie(example, dspy.Prediction(answer="A")) == 1.0  # no logprobs: plain accuracy
    assert objective_metric("log-p-gold", accuracy)(example, said("B", -6.0)) == 0.0  # clipped at -5
    assert objective_metric("margin", accuracy)(example, said("A", math.log(0.5))) == pytest.approx(0.5)
    with pytest.raises(ConfigError, match="objective: must be one of"):
        TuneSettings(objective="loss")
    args = build_parser().parse_args(["fit", "--method", "rag", "--objective", "margin"])
    assert load_settings(args, FitSettings)[1].objective == "margin"
