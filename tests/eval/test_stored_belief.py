"""Belief measures are derived from each row's own stored distribution by every reader (report, merge, fit's
reads), never read from the row: a forged p(gold) or margin does not reach a report, and a distribution that is not
one is left out and said."""

from __future__ import annotations

import json
import math

import pytest

import hyporag
from hyporag.eval.belief import distribution_problem, rederived, top_option
from hyporag.eval.results_store import read_results
from hyporag.eval.run_report import report_from_dir
from hyporag.eval.shards import merge_runs
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import EvalSettings
from hyporag.testing import fake_openai

QUESTIONS = [{"id": f"q{i}", "question": f"Which organ makes hormone {i}?",
              "options": {"A": "Pancreas", "B": "Kidney", "C": "Liver", "D": "Heart"}, "answer": "B"}
             for i in range(4)]
BELIEF = {"A": -0.3, "B": -1.5, "C": -3.0, "D": -4.0}  # the reader says A; gold B holds about 0.2


def run(base: str, out, shard: str | None = None):
    return hyporag.evaluate(RunConfig(methods="cot", out=str(out), lm="openai/m", api_base=base, api_key="k",
                                      no_cache=True), EvalSettings(shard=shard), examples=QUESTIONS, progress=False)


def forge(out, edit) -> None:
    path = out / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(edit(dict(r))) + "\n" for r in rows))


def forged(row: dict) -> dict:
    return {**row, "log_p_gold": -0.01, "p_gold": 0.99, "margin": 5.0}


def test_forged_measures_in_a_run_are_derived_again_from_the_distribution(tmp_path, capsys):
    with fake_openai(["m"], letter_logprobs=BELIEF) as server:
        honest = run(server.base(), tmp_path / "run").summary("cot")
    forge(tmp_path / "run", forged)
    capsys.readouterr()
    summary = report_from_dir(tmp_path / "run")["methods"][0]
    assert summary["p_gold"] == pytest.approx(honest["p_gold"]) and 0.1 < summary["p_gold"] < 0.4
    assert summary["margin"] == pytest.approx(honest["margin"]) and summary["margin"] < 0
    assert "4 row(s) stored belief measures" in capsys.readouterr().err
    assert all(0.1 < r["p_gold"] < 0.4 for r in read_results(tmp_path / "run"))


def test_forged_measures_in_shards_do_not_reach_the_merge(tmp_path):
    with fake_openai(["m"], letter_logprobs=BELIEF) as server:
        for i in (1, 2):
            run(server.base(), tmp_path / f"s{i}", shard=f"{i}/2")
    forge(tmp_path / "s1", forged)
    summary = merge_runs([tmp_path / "s1", tmp_path / "s2"], tmp_path / "merged")["methods"][0]
    assert 0.1 < summary["p_gold"] < 0.4 and summary["margin"] < 0


@pytest.mark.parametrize("edit, why", [
    (lambda r: {**r, "option_logprobs": {k: v for k, v in r["option_logprobs"].items() if k != "B"}},
     "the gold option 'B' is not in the distribution"),
    (lambda r: {**r, "option_logprobs": {**r["option_logprobs"], "C": 0.5}}, "above 0"),
    (lambda r: {**r, "option_logprob_status": "great"}, "is not one of"),
    (lambda r: {**r, "option_logprobs": {k: v - 1.0 for k, v in r["option_logprobs"].items()}}, "sum to"),
])
def test_a_distribution_that_is_not_one_is_left_out_and_said(tmp_path, capsys, edit, why):
    with fake_openai(["m"], letter_logprobs=BELIEF) as server:
        run(server.base(), tmp_path / "run")
    forge(tmp_path / "run", lambda r: edit(r) if r["question_id"] == "q0" else r)
    capsys.readouterr()
    report = report_from_dir(tmp_path / "run")
    err = capsys.readouterr().err
    assert "1 row(s) hold an option distribution that is not one" in err and why in err
    summary = report["methods"][0]
    assert summary["with_probabilities"] == 3 and summary["damaged_distributions"] == 1
    assert report["decision"]["means"]["cot"]["statuses"] == {"ok": 3, "damaged": 1}
    damaged = next(r for r in read_results(tmp_path / "run") if r["question_id"] == "q0")
    assert damaged["p_gold"] is None and damaged["margin"] is None


def test_a_null_measure_with_status_ok_is_derived_from_its_distribution():
    row = {"gold": "B", "option_logprob_status": "ok", "log_p_gold": None, "p_gold": None, "margin": None,
           "option_logprobs": {"A": math.log(0.7), "B": math.log(0.3)}}
    derived = rederived(row)
    assert derived["p_gold"] == pytest.approx(0.3) and derived["margin"] < 0 and "damaged_distribution" not in derived
    assert top_option(row["option_logprobs"]) == "A"


def test_rows_from_before_probabilities_are_not_damaged():
    assert distribution_problem(None, None, "A") is None
    assert distribution_problem(None, "none", "A") is None
    assert distribution_problem({"A": -0.1, "B": None}, "partial", "A") is None
