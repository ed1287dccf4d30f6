"""One reading of a run's comparisons: the stop rule of `eval --until-decided` and the report drawn from the same
directory afterwards say the same thing (same methods, same alpha split, each pair on what its two sides answered),
the outcome at the stop is kept in run.json, and a deciding measure added to the registry in one place reaches the
report, the gate and the page."""

from __future__ import annotations

import json

import pytest

import hyporag
from hyporag.eval.measures import REGISTRY, Measure, register
from hyporag.eval.run_report import markdown, report_from_dir
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import EvalSettings
from hyporag.testing import fake_openai, write_jsonl

QUESTIONS = [{"id": f"q{i:03d}", "question": f"Which cells secrete hormone {i}?",
              "options": {"A": "Beta cells", "B": "Alpha cells", "C": "Liver"}, "answer": "A"} for i in range(80)]
SAYS = {"(no passages)": ({"answer": "B"}, {"A": -2.0, "B": -0.2, "C": -3.0}),  # cot: wrong and sure of it
        "[1]": ({"answer": "A"}, {"A": -0.1, "B": -2.6, "C": -3.5})}  # rag and chr read a passage: right


def evaluate(server, tmp_path, methods: str, limit: int, **settings):
    dataset = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "p1", "title": "Islets", "contents": "Beta cells."}])
    return hyporag.evaluate(RunConfig(dataset=str(dataset), methods=methods, out=str(tmp_path / "run"),
                                      corpus=str(corpus), limit=limit, budget=1, lm="openai/m",
                                      api_base=server.base(), api_key="k", no_cache=True),
                            EvalSettings(**settings), progress=False)


def test_the_stop_and_the_report_drawn_after_it_agree(tmp_path):
    """A directory holding cot, rag and chr on 20 questions, then `--methods cot,rag --until-decided` into it: the
    stop rule reads chr too (it shares alpha, paired on its own 20 questions), so the report that follows says
    what the stop said, comparison by comparison."""
    with fake_openai(["m"], by_prompt=SAYS) as server:
        server.by_prompt["hormone 7?"] = ({"answer": "A"}, {"A": -0.3, "B": -1.5, "C": -3.0})
        evaluate(server, tmp_path, "cot,rag,chr", 20)
        report = evaluate(server, tmp_path, "cot,rag", 80, until_decided=True)
    record = json.loads((tmp_path / "run" / "run.json").read_text())["sequential"]
    at_stop, stopped = record["at_stop"], record["stopped_at"]
    assert set(at_stop) == {"cot", "chr"} and at_stop["cot"]["outcome"] == "worse" and stopped < 80
    drawn = report_from_dir(tmp_path / "run")["sequential"]["comparisons"]
    for name, then in at_stop.items():
        assert (drawn[name]["outcome"], drawn[name]["decided_at"]) == (then["outcome"], then["decided_at"])
        assert "at_stop" not in drawn[name]  # nothing differs, so nothing is set beside
    assert drawn["cot"]["by"] == "p_gold" and drawn["chr"]["paired"] == 20
    assert report.report["sequential"]["alpha_each"] == 0.05 / 2  # cot and chr share alpha, as the stop did
    assert record["reason"].startswith("every comparison")


def test_a_method_added_after_the_stop_is_read_beside_the_outcome_at_the_stop(tmp_path):
    with fake_openai(["m"], by_prompt=SAYS) as server:
        evaluate(server, tmp_path, "cot,rag", 80, until_decided=True)
        stop = json.loads((tmp_path / "run" / "run.json").read_text())["sequential"]["at_stop"]["cot"]
        evaluate(server, tmp_path, "hyde", 80)  # a third method: alpha is now split over two comparisons
    drawn = report_from_dir(tmp_path / "run")["sequential"]["comparisons"]
    # cot was worse at the stop with all of alpha; hyde now shares it, and on the same few questions half of alpha
    # does not decide: the report says both, never one in place of the other
    assert stop["outcome"] == "worse" and drawn["cot"]["outcome"] == "undecided"
    assert drawn["cot"]["at_stop"] == stop
    assert f"cot: worse at the run's stop (question {stop['decided_at']}), undecided read now" in markdown(
        report_from_dir(tmp_path / "run"))


@pytest.fixture
def answered_a():
    """A deciding measure of a test's own, registered in one place: 1 when the answer is A (lower is better, so the
    registry's orientation is exercised too: here answering A is bad)."""
    measure = register(Measure("not_a", "answered other than A", lambda r: None if r.error else float(
        r.answer != "A"), 0.0, 1.0, False, 0.05))
    yield measure
    REGISTRY.pop("not_a", None)


def test_a_measure_registered_once_reaches_the_report_the_gate_and_the_page(tmp_path, answered_a):
    with fake_openai(["m"], by_prompt=SAYS) as server:
        report = evaluate(server, tmp_path, "cot,rag", 40, decide_on="not_a")
    cot = report.report["sequential"]["comparisons"]["cot"]
    assert cot["by"] == "not_a" and cot["outcome"] == "worse" and cot["mean"] < 0  # cot answers B: "other than A"
    assert "answered other than A" in markdown(report.report) and "p(gold) (beside, not deciding)" in \
        markdown(report.report)
    page = (tmp_path / "run" / "report.html").read_text()
    assert "answered other than A" in page
    gated = hyporag.compare(tmp_path / "run", tmp_path / "run", decide_on="not_a")
    assert gated["comparisons"]["cot"]["by"] == "not_a" and gated["comparisons"]["cot"]["outcome"] == "undecided"
    with pytest.raises(hyporag.foundation.errors.ConfigError, match="--decide-on"):
        EvalSettings.from_dict({"decide_on": "not_b"}, source="command line")
