"""The Optuna study: seeded, journal-backed, resumable after a worker is killed mid-trial."""

from __future__ import annotations

import optuna
import pytest
from dspy.utils import DummyLM
from optuna.trial import TrialState

from hyporag.eval.metric_fns import accuracy
from hyporag.optimizers.tune import open_study, recover_stale_trials, run_study, study_report
from hyporag.programs import make_program
from hyporag.programs.lm import LMRoles

REPLIES = {"[[ ## target_hypothesis ## ]]": {"target_hypothesis": "Beta cells secrete insulin.",
                                            "mimic_hypothesis": "Alpha cells secrete glucagon."},
           "[[ ## answer ## ]]": {"answer": "B"}}


def factory(retriever):
    roles = LMRoles.from_lms(DummyLM(dict(REPLIES)))
    return lambda kwargs: make_program("chr", retriever=retriever, roles=roles, budget=2, **kwargs)


def test_study_runs_resumes_and_reports(tiny_retriever, tiny_questions, tmp_path):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = open_study("chr-test", None, seed=3, directory=tmp_path)
    run_study(study, factory(tiny_retriever), tiny_questions, accuracy, "chr", ["bm25", "dense"], 2, trials=2)
    assert len(study.trials) == 2 and all(t.state == TrialState.COMPLETE for t in study.trials)

    # A worker killed mid-trial leaves a RUNNING trial behind; the next run fails it and re-queues its params.
    reopened = open_study("chr-test", None, seed=3, directory=tmp_path)
    stale = reopened.ask({"mode": optuna.distributions.CategoricalDistribution(["bm25", "dense"])})
    import socket

    stale.set_user_attr("worker", f"{socket.gethostname()}:999999999")
    assert recover_stale_trials(reopened) == 1
    run_study(reopened, factory(tiny_retriever), tiny_questions, accuracy, "chr", ["bm25", "dense"], 2, trials=3)
    states = [t.state for t in open_study("chr-test", None, seed=3, directory=tmp_path).trials]
    assert states.count(TrialState.COMPLETE) == 3 and states.count(TrialState.FAIL) == 1
    assert (tmp_path / "chr-test.journal").is_file()

    rows = study_report(reopened, tmp_path)
    assert rows and rows[0]["value"] == pytest.approx(1 / 3)  # the dummy answers B to all three
    assert (tmp_path / "chr-test-history.png").is_file()


def test_baseline_params_describe_the_untuned_program():
    from hyporag.optimizers.tune import baseline_params

    hcqr = {"method": "hcqr", "mode": None, "per_query_k": 3, "merge_policy": "round_robin"}
    assert baseline_params(hcqr, "bm25", ["bm25", "dense"]) == {"mode": "bm25", "per_query_k": 3,
                                                                 "merge_policy": "round_robin"}
    chr_linear = {"mode": "dense", "schedule": {"kind": "linear", "lam": 1.0, "lam_min": 0.1, "lam_max": 0.9,
                                                 "tau": 0.7, "steepness": 10.0}}
    assert baseline_params(chr_linear, "bm25", ["bm25"]) == {"mode": "bm25", "schedule": "linear", "lam_min": 0.1,
                                                             "lam_max": 0.9, "tau": 0.7, "steepness": 10.0}
