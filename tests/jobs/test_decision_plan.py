"""The estimate before a deciding run, in the deciding measure: the planner's streams and decisions (the stop rule's
own), the smallest difference a run's n can show, and the lines an evaluation prints (and keeps in run.json) before
its first question, from an assumed difference or from an earlier run's paired questions."""

from __future__ import annotations

import json

import numpy as np
import pytest

import hyporag
from hyporag.eval.comparisons import decide_stream
from hyporag.eval.measures import measure_named
from hyporag.eval.planning import assumed, decision_point, resampled, simulate, smallest_detectable
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import EvalSettings
from tests.jobs.test_until_decided import QUESTIONS, roles

ACCURACY, P_GOLD = measure_named("accuracy"), measure_named("p_gold")


def test_the_assumed_stream_has_the_stated_difference_and_split():
    draw = assumed(0.1, ACCURACY, 0.3)(np.random.default_rng(0), 20000)
    assert np.mean(draw) == pytest.approx(0.1, abs=0.01) and np.mean(draw != 0) == pytest.approx(0.3, abs=0.01)
    with pytest.raises(ValueError, match="at least that share"):
        assumed(0.4, ACCURACY, 0.3)
    continuous = assumed(0.05, P_GOLD)(np.random.default_rng(0), 20000)
    assert np.mean(continuous) == pytest.approx(0.05, abs=0.01) and np.all(np.abs(continuous) <= 1)


def test_a_decision_point_is_where_the_reports_reading_decides():
    stream = np.random.default_rng(1).choice([1.0, 0.0, -1.0], 120, p=[0.3, 0.6, 0.1])
    at, outcome = decision_point(stream, ACCURACY, 0.025)
    decision = decide_stream(list(stream), list(range(1, 121)), ACCURACY, 0.025, ACCURACY.delta)
    assert (at, outcome) == (decision.decided_at, decision.outcome) == (at, "better")


def test_larger_effects_decide_sooner_and_more_questions_show_smaller_ones():
    sooner = simulate(assumed(0.2, ACCURACY), 300, 0.025, "", ACCURACY, sims=40)
    later = simulate(assumed(0.1, ACCURACY), 300, 0.025, "", ACCURACY, sims=40)
    assert sooner.mean_questions < later.mean_questions and sooner.decided_share >= later.decided_share
    assert simulate(assumed(0.1, ACCURACY), 300, 0.025, "", ACCURACY, sims=40) == later  # seeded
    assert smallest_detectable(300, 0.025, ACCURACY) < smallest_detectable(100, 0.025, ACCURACY)
    assert smallest_detectable(6, 0.025, ACCURACY) is None  # 6 questions cannot decide even 0.3 of them one way


def test_an_earlier_runs_questions_are_resampled_on_the_deciding_measure():
    paired = [{"accuracy": 1.0, "p_gold": 0.5}, {"accuracy": 0.0, "p_gold": None}]
    drawn = resampled(paired, P_GOLD)(np.random.default_rng(0), 400)
    assert set(drawn[~np.isnan(drawn)]) == {0.5} and np.isnan(drawn).any()  # each question kept whole
    with pytest.raises(ValueError, match="no paired questions with"):
        resampled([{"p_gold": None}], P_GOLD)


def test_a_deciding_run_prints_its_plan_first_and_keeps_it(tiny_corpus_dir, tmp_path, capsys):
    rolled, _ = roles("B")
    config = RunConfig(methods="cot,rag", out=str(tmp_path / "first"), corpus=str(tiny_corpus_dir), budget=2)
    hyporag.evaluate(config, EvalSettings(until_decided=True, decide_on="accuracy"), roles=rolled,
                     examples=QUESTIONS, progress=False)
    err = capsys.readouterr().err
    assert "plan: 2 method(s), 1 comparison(s) decided on accuracy at alpha 0.05 (0.05 each), up to 60 questions" \
        in err
    assert "plan: a accuracy difference of 0.1 (30% of questions split): " in err and "LM calls" in err
    assert "plan: the smallest accuracy difference 60 questions decide 80% of the time: " in err
    plan = json.loads((tmp_path / "first" / "run.json").read_text())["sequential"]["plan"]
    assert plan["plans"]["assumed"]["max_n"] == 60 and plan["calls_per_question"] == 2.0
    # planned from that run: cot is wrong wherever rag is right, so a decision comes within a few questions
    rolled, lm = roles("B")
    second = RunConfig(methods="cot,rag", out=str(tmp_path / "second"), corpus=str(tiny_corpus_dir), budget=2)
    hyporag.evaluate(second, EvalSettings(plan_from=str(tmp_path / "first"), decide_on="accuracy"), roles=rolled,
                     examples=QUESTIONS[:4], progress=False)
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if x.startswith("plan: cot against rag as in "))
    assert "not decided within 4 questions in any simulated run" in line  # 4 questions: too few
    with pytest.raises(HyporagError, match="holds none of this run's methods"):
        hyporag.evaluate(RunConfig(methods="hcqr,rag", out=str(tmp_path / "third"), corpus=str(tiny_corpus_dir)),
                         EvalSettings(plan_from=str(tmp_path / "first")), roles=rolled, examples=QUESTIONS[:2],
                         progress=False)
    with pytest.raises(HyporagError, match="its rows hold no p\\(gold\\) to plan from"):  # DummyLM: no logprobs
        hyporag.evaluate(RunConfig(methods="cot,rag", out=str(tmp_path / "fourth"), corpus=str(tiny_corpus_dir)),
                         EvalSettings(plan_from=str(tmp_path / "first"), decide_on="p_gold"), roles=rolled,
                         examples=QUESTIONS[:2], progress=False)
    assert len(lm.history) == 8  # planning asks the model nothing
