"""The estimate before a deciding run: the planner's streams and sequences (the stop rule's own), the smallest
effect a run's n can show, and the lines an evaluation prints (and keeps in run.json) before its first question,
from an assumed effect or from an earlier run's paired questions."""

from __future__ import annotations

import json

import numpy as np
import pytest

import hyporag
from hyporag.eval.planning import assumed_accuracy, decision_point, resampled, simulate, smallest_detectable
from hyporag.eval.sequential import read_sequence
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import EvalSettings
from tests.jobs.test_until_decided import QUESTIONS, roles


def test_the_assumed_stream_has_the_stated_difference_and_split():
    draw = assumed_accuracy(0.1, 0.3)(np.random.default_rng(0), 20000)["accuracy"]
    assert np.mean(draw) == pytest.approx(0.1, abs=0.01) and np.mean(draw != 0) == pytest.approx(0.3, abs=0.01)
    with pytest.raises(ValueError, match="at least that share"):
        assumed_accuracy(0.4, 0.3)


def test_a_decision_point_is_where_the_reports_sequence_decides():
    stream = np.random.default_rng(1).choice([1.0, 0.0, -1.0], 120, p=[0.3, 0.6, 0.1])
    at, outcome = decision_point({"accuracy": stream}, 0.0125, grid=1000)
    verdict = read_sequence(stream, "accuracy", 0.0125)
    assert (at, outcome) == (verdict.decided_at, verdict.outcome) == (at, "better")


def test_larger_effects_decide_sooner_and_more_questions_show_smaller_ones():
    sooner = simulate(assumed_accuracy(0.2), 300, 0.0125, "", sims=40)
    later = simulate(assumed_accuracy(0.1), 300, 0.0125, "", sims=40)
    assert sooner.mean_questions < later.mean_questions and sooner.decided_share >= later.decided_share
    assert simulate(assumed_accuracy(0.1), 300, 0.0125, "", sims=40) == later  # seeded
    assert smallest_detectable(300, 0.0125) < smallest_detectable(100, 0.0125)
    assert smallest_detectable(10, 0.0125) is None  # 10 questions cannot decide even 0.3 of them all one way


def test_an_earlier_runs_questions_are_resampled_whole():
    paired = [{"accuracy": 1.0, "log_p_gold_clipped": 0.5}, {"accuracy": 0.0, "log_p_gold_clipped": None}]
    drawn = resampled(paired)(np.random.default_rng(0), 400)
    assert set(drawn["accuracy"]) == {0.0, 1.0}
    assert np.all(np.isnan(drawn["log_p_gold_clipped"]) == (drawn["accuracy"] == 0.0))  # each question kept whole


def test_a_deciding_run_prints_its_plan_first_and_keeps_it(tiny_corpus_dir, tmp_path, capsys):
    rolled, _ = roles("B")
    config = RunConfig(methods="cot,rag", out=str(tmp_path / "first"), corpus=str(tiny_corpus_dir), budget=2)
    hyporag.evaluate(config, EvalSettings(until_decided=True), roles=rolled, examples=QUESTIONS, progress=False)
    err = capsys.readouterr().err
    assert "plan: 2 method(s), 1 comparison(s) at alpha 0.05 (0.025 each sequence), up to 60 questions" in err
    assert "plan: an accuracy difference of 0.1 (30% of questions split): " in err and "LM calls" in err
    assert "plan: the smallest accuracy difference 60 questions decide 80% of the time: " in err
    plan = json.loads((tmp_path / "first" / "run.json").read_text())["sequential"]["plan"]
    assert plan["plans"]["assumed"]["max_n"] == 60 and plan["calls_per_question"] == 2.0
    # planned from that run: cot is wrong wherever rag is right, so a decision comes within a few questions
    rolled, lm = roles("B")
    second = RunConfig(methods="cot,rag", out=str(tmp_path / "second"), corpus=str(tiny_corpus_dir), budget=2)
    hyporag.evaluate(second, EvalSettings(plan_from=str(tmp_path / "first"), max_questions=None), roles=rolled,
                     examples=QUESTIONS[:4], progress=False)
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if x.startswith("plan: cot against rag as in "))
    assert "not decided within 4 questions in any simulated run" in line  # 4 questions: too few
    with pytest.raises(HyporagError, match="holds none of this run's methods"):
        hyporag.evaluate(RunConfig(methods="hcqr,rag", out=str(tmp_path / "third"), corpus=str(tiny_corpus_dir)),
                         EvalSettings(plan_from=str(tmp_path / "first")), roles=rolled, examples=QUESTIONS[:2],
                         progress=False)
    assert len(lm.history) == 8  # planning asks the model nothing
