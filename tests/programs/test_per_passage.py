"""Per-passage answers against a served model that gives each prompt its own option log-probabilities: each
passage read alone beside the closed-book answer, mixed as the mixture says, each passage's pull recorded; the
readings share the prompt up to the passage byte for byte; retrieval on demand answers closed-book when sure."""

from __future__ import annotations

import json
import math

import pytest

import hyporag
from hyporag.eval.row import ResultRow
from hyporag.jobs.run_config import RunConfig
from hyporag.programs.mixture import mix
from hyporag.testing import SMALL_MODEL, fake_openai
from tests.conftest import QUESTIONS, write_jsonl

SAYS = {  # q1: which cells secrete insulin? gold B (beta cells)
    "Beta cells of the pancreatic islets": ({"answer": "B"}, {"A": -2.0, "B": -0.2, "C": -3.0, "D": -4.0}),
    "Follicular cells of the thyroid": ({"answer": "C"}, {"A": -1.5, "B": -1.2, "C": -0.8, "D": -4.0}),
    "(no passages)": ({"answer": "A"}, {"A": -0.9, "B": -1.0, "C": -2.0, "D": -3.0}),
}
ELSE = {"A": -0.6, "B": -1.0, "C": -3.0, "D": -4.0}  # any other passage: toward A (a distractor)


def normalised(logprobs: dict[str, float]) -> dict[str, float]:
    norm = math.log(sum(math.exp(v) for v in logprobs.values()))
    return {o: v - norm for o, v in logprobs.items()}


def evaluate(tmp_path, corpus, server, out: str, **program) -> list[ResultRow]:
    dataset = write_jsonl(tmp_path / "q.jsonl", QUESTIONS[:1])
    hyporag.evaluate(RunConfig(dataset=str(dataset), methods="rag", out=str(tmp_path / out), corpus=str(corpus),
                               lm="openai/m", api_base=server.base(), api_key="k", no_cache=True, budget=3,
                               **program), progress=False)
    return [ResultRow.of(json.loads(line)) for line in (tmp_path / out / "results.jsonl").read_text().splitlines()]


def test_each_passage_is_read_alone_mixed_and_its_pull_kept(tiny_corpus_dir, tmp_path, capsys):
    with fake_openai(["m"], letter_logprobs=ELSE, by_prompt=SAYS) as server:
        (row,) = evaluate(tmp_path, tiny_corpus_dir, server, "pp", answer_mode="per-passage", prior_weight=0.2,
                          mix_temperature=1.0)
        bodies = list(server.bodies)
    assert row.calls == 4 and len(row.passage_readings) == 3 and row.closed_book["answer"] == "A"
    assert "rag: per passage, 4 LM calls a question (the closed-book answer and 3 readings" in capsys.readouterr().err
    readings = [r["option_logprobs"] for r in row.passage_readings]
    expected, weights = mix(row.closed_book["option_logprobs"], readings, list("ABCD"), 0.2, 1.0, "linear")
    assert row.option_logprobs == expected and row.mixture_weights == weights and weights[0] == 0.2
    assert row.answer == max(expected, key=expected.get) and row.option_logprob_status == "ok"
    by_passage = dict(zip(row.passage_ids, row.passage_pulls, strict=True))
    assert by_passage["p1"]["direction"] == "gold" and by_passage["p1"]["toward"] == "B"
    alone, before = (normalised(SAYS[k][1]) for k in ("Beta cells of the pancreatic islets", "(no passages)"))
    assert by_passage["p1"]["by"] == pytest.approx(alone["B"] - before["B"], abs=1e-3)
    assert set(by_passage) == {"p1", "p9", "p6"}  # BM25's top 3 for the question
    assert by_passage["p6"]["direction"] == "distractor" and by_passage["p6"]["toward"] == "C"
    assert by_passage["p9"]["toward"] == "A" and by_passage["p9"]["gold_shift"] < 0
    # the layout: every reading's prompt is the closed-book prompt's up to the context, byte for byte
    prompts = [json.dumps(b["messages"]) for b in bodies]
    closed = next(p for p in prompts if "(no passages)" in p)
    prefix = closed[: closed.index("(no passages)")]
    assert "Osteoclasts" in prefix and all(p.startswith(prefix) for p in prompts)


def test_the_summary_gives_the_pull_shares_and_the_joint_answer_reads_nothing_alone(tiny_corpus_dir, tmp_path):
    with fake_openai(["m"], letter_logprobs=ELSE, by_prompt=SAYS) as server:
        evaluate(tmp_path, tiny_corpus_dir, server, "pp", answer_mode="per-passage")
        (joint,) = evaluate(tmp_path, tiny_corpus_dir, server, "joint")
    summary = json.loads((tmp_path / "pp" / "summary.json").read_text())["methods"][0]
    assert summary["read_alone"] == 1 and summary["pulled_passages"] == 3
    assert summary["pull_gold"] == pytest.approx(1 / 3, abs=1e-3) and summary["pull_distractor"] == pytest.approx(
        2 / 3, abs=1e-3)
    notes = (tmp_path / "pp" / "summary.md").read_text()
    assert "of 3 passages read alone, 33% pulled the reader toward the correct option and 67% toward another" in notes
    assert joint.calls == 1 and not joint.passage_readings and joint.closed_book is None and joint.retrieved is None


@pytest.mark.parametrize(("threshold", "retrieves"), [(0.3, False), (0.9, True)])
def test_retrieval_on_demand_answers_closed_book_when_the_reader_is_sure(tiny_corpus_dir, tmp_path, threshold,
                                                                         retrieves):
    # closed-book top probability: exp(-0.9) renormalised over A-D, about 0.38
    with fake_openai(["m"], letter_logprobs=ELSE, by_prompt=SAYS) as server:
        (row,) = evaluate(tmp_path, tiny_corpus_dir, server, f"od-{threshold}", retrieve_below=threshold)
    assert row.retrieved is retrieves and bool(row.passage_ids) is retrieves
    assert row.calls == (2 if retrieves else 1) and row.closed_book["answer"] == "A"
    summary = json.loads((tmp_path / f"od-{threshold}" / "summary.json").read_text())["methods"][0]
    assert summary["retrieved_share"] == float(retrieves)


def test_the_new_settings_survive_an_artifact_round_trip(tiny_corpus_dir, tmp_path):
    from hyporag.jobs.builders import build_retriever
    from hyporag.optimizers.artifact import load_artifact, save_artifact
    from hyporag.programs import make_program
    from tests.conftest import dummy_roles

    run = RunConfig(corpus=str(tiny_corpus_dir))
    retriever = build_retriever(run, True)
    roles = dummy_roles([{"answer": "A"}])
    program = make_program("rag", retriever=retriever, roles=roles, answer_mode="per-passage", mix="loglinear",
                           mix_temperature=2.5, prior_weight=0.4, retrieve_below=0.7)
    save_artifact(tmp_path / "art", program, retriever, roles.specs(), {})
    loaded = load_artifact(tmp_path / "art", retriever, roles)
    assert loaded.config == program.config and loaded.config.answer_mode == "per-passage"
    cot = make_program("cot", roles=roles, answer_mode="per-passage", retrieve_below=0.5)
    assert cot.config.answer_mode == "joint" and cot.config.retrieve_below is None  # nothing to read apart


@pytest.mark.local_lm
def test_the_embedded_reader_answers_per_passage(tiny_corpus_dir, tmp_path):
    dataset = write_jsonl(tmp_path / "q.jsonl", QUESTIONS[:1])
    report = hyporag.evaluate(RunConfig(dataset=str(dataset), methods="rag", out=str(tmp_path / "local"),
                                        corpus=str(tiny_corpus_dir), lm=f"local:{SMALL_MODEL}", budget=2,
                                        answer_mode="per-passage"), progress=False)
    row = ResultRow.of(json.loads((tmp_path / "local" / "results.jsonl").read_text().splitlines()[0]))
    assert len(row.passage_readings) == 2 and row.closed_book is not None and row.calls == 3
    assert row.option_logprob_status == "ok" and len(row.passage_pulls) == 2
    assert report.summary("rag").read_alone == 1


def test_the_pull_objective_scores_the_share_of_passages_pulling_toward_gold():
    import dspy

    from hyporag.eval.dspy_metrics import accuracy, objective_metric

    closed = {"answer": "A", "option_logprobs": normalised({"A": -0.5, "B": -1.0}), "status": "ok"}
    toward_b = {"answer": "B", "option_logprobs": normalised({"A": -2.0, "B": -0.1}), "status": "ok"}
    toward_a = {"answer": "A", "option_logprobs": normalised({"A": -0.1, "B": -2.5}), "status": "ok"}
    prediction = dspy.Prediction(answer="B", passage_readings=[toward_b, toward_a, toward_b], closed_book=closed)
    example = dspy.Example(question="q", options={"A": "a", "B": "b"}, answer="B")
    assert objective_metric("pull", accuracy)(example, prediction) == pytest.approx(2 / 3)
    assert objective_metric("pull", accuracy)(example, dspy.Prediction(answer="B")) == 0.0  # nothing read alone


def test_the_page_shows_each_passages_pull(tiny_corpus_dir, tmp_path):
    from selenium.webdriver.common.by import By

    from tests.eval.test_viewer import chromium

    with fake_openai(["m"], letter_logprobs=ELSE, by_prompt=SAYS) as server:
        (row,) = evaluate(tmp_path, tiny_corpus_dir, server, "pp", answer_mode="per-passage")
    browser = chromium()
    try:
        browser.get((tmp_path / "pp" / "report.html").as_uri() + "#r=0&q=q1")
        column = browser.find_element(By.CSS_SELECTOR, '#columns .column[data-method="rag"]')
        metas = [m.text for m in column.find_elements(By.CSS_SELECTOR, ".passage .meta")]
        by_passage = dict(zip(row.passage_ids, metas, strict=True))
        assert f"this passage moved the reader toward B by +{row.passage_pulls[0]['by']:.2f}" in by_passage["p1"]
        assert "toward C by +" in by_passage["p6"] and "; B -" in by_passage["p6"]  # the gold option's own shift
        assert column.find_elements(By.CSS_SELECTOR, ".pull.toward-gold") and "closed-book answer A" in column.text
        browser.get((tmp_path / "pp" / "report.html").as_uri() + "#r=0")
        assert "0.33 / 0.67" in browser.find_element(By.ID, "summary").text  # pulls toward gold / toward another
    finally:
        browser.quit()


def test_a_run_recorded_before_the_settings_existed_resumes_under_their_defaults():
    from hyporag.eval.results_store import differing_settings

    older = {"budget": 4, "mode": None}  # a run.json written before per-passage answers existed
    assert differing_settings(older, {**older, "answer_mode": "joint", "prior_weight": 0.2}) == []
    assert differing_settings(older, {**older, "answer_mode": "per-passage"}) == ["answer_mode"]
    assert differing_settings({**older, "budget": 5}, older) == ["budget"]


def test_without_option_probabilities_the_readings_vote_and_on_demand_always_retrieves(tiny_corpus_dir, tmp_path):
    """A backend with no logprobs (DummyLM here): per passage, the letters vote (a `vote` fallback, no
    probabilities); closed-book first cannot tell sure from unsure, so it retrieves (an `on_demand` fallback)."""
    from hyporag.jobs.builders import build_retriever
    from hyporag.programs import make_program
    from tests.conftest import dummy_roles

    retriever = build_retriever(RunConfig(corpus=str(tiny_corpus_dir)), True)
    voting = make_program("rag", retriever=retriever, roles=dummy_roles([{"answer": "B"}] * 4), budget=3,
                          answer_mode="per-passage")
    result = voting(question=QUESTIONS[0]["question"], options=QUESTIONS[0]["options"])
    assert result.answer == "B" and result.option_logprobs is None and result.fallbacks == {"vote": 1}
    unsure = make_program("rag", retriever=retriever, roles=dummy_roles([{"answer": "A"}] * 2), budget=2,
                          retrieve_below=0.5)
    result = unsure(question=QUESTIONS[0]["question"], options=QUESTIONS[0]["options"])
    assert result.retrieved is True and len(result.passages) == 2 and "on_demand" in result.fallbacks
    with pytest.raises(Exception, match="must be between 0 and 1"):
        make_program("rag", retriever=retriever, roles=dummy_roles([]), prior_weight=1.5)
