"""A reply cut short in transit (an HTTP 200 whose body is not a reply) is a transport fault: the question is asked
again within the run, as a 500 is, and counted; errored rows that remain are labelled as counted wrong."""

from __future__ import annotations

import hyporag
from hyporag.eval.run_report import markdown
from hyporag.jobs.run_config import RunConfig
from hyporag.testing import fake_openai

QUESTIONS = [{"question": f"Which organ makes hormone {i}?", "options": {"A": "Pancreas", "B": "Kidney"},
              "answer": "A"} for i in range(8)]


def evaluate(base: str, out):
    return hyporag.evaluate(RunConfig(methods="cot", out=str(out), lm="openai/m", api_base=base, api_key="k",
                                      no_cache=True), examples=QUESTIONS, progress=False)


def test_cut_replies_are_asked_again_and_no_row_is_lost(tmp_path):
    with fake_openai(["m"]) as server:
        server.cut, server.fail = {2, 5, 6}, {8}  # three bodies cut in half, one 500
        report = evaluate(server.base(), tmp_path / "run")
        assert server.completions == len(QUESTIONS) + 4
    summary = report.summary("cot")
    assert summary["errors"] == 0 and summary["accuracy"] == 1.0 and summary["malformed_replies"] == 3
    assert "were asked again: cot 3" in markdown(report.report)


def test_errored_rows_are_labelled_as_counted_wrong(tmp_path):
    with fake_openai(["m"]) as server:
        server.cut = {1, 2, 3, 4}  # the first question never gets a whole reply: asked 4 times, then errored
        report = evaluate(server.base(), tmp_path / "run")
    summary = report.summary("cot")
    assert summary["errors"] == 1 and summary["accuracy"] == 7 / 8 and summary["malformed_replies"] == 4
    assert "Errored rows count as wrong in accuracy (cot 1 of 8)" in markdown(report.report)
