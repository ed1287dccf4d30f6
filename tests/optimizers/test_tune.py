"""The Optuna study: seeded, journal-backed, resumable after a worker is killed mid-trial."""

from __future__ import annotations

import optuna
import pytest
from dspy.utils import DummyLM
from optuna.trial import TrialState

from hyporag.eval.dspy_metrics import accuracy, objective_metric
from hyporag.optimizers import study as tune_module
from hyporag.optimizers.study import open_study, recover_stale_trials, run_study, score_trial, study_report
from hyporag.programs import make_program
from hyporag.programs.chr import CHRConfig
from tests.conftest import chr_replies, dummy_roles

REPLIES = chr_replies("B")


CHR2 = CHRConfig(budget=2, retrieval_sees_options=True)


def factory(retriever):
    roles = dummy_roles(REPLIES)
    return lambda config: make_program("chr", retriever=retriever, roles=roles, config=config)


def test_study_runs_resumes_and_reports(tiny_retriever, tiny_questions, tmp_path, capsys):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = open_study("chr-test", None, seed=3, directory=tmp_path)
    run_study(study, CHR2, factory(tiny_retriever), tiny_questions, accuracy, ["bm25", "dense"], trials=2,
              progress=True)
    assert len(study.trials) == 2 and all(t.state == TrialState.COMPLETE for t in study.trials)
    shown = capsys.readouterr()  # a bar per trial while it runs (minutes each on a CPU model), then its value
    assert all(f"trial {n}:   0%|          | 0/{len(tiny_questions)}" in shown.err for n in (0, 1))
    assert "trial 1: " in shown.out

    # A worker killed mid-trial leaves a RUNNING trial behind; the next run fails it and re-queues its params.
    reopened = open_study("chr-test", None, seed=3, directory=tmp_path)
    stale = reopened.ask({"mode": optuna.distributions.CategoricalDistribution(["bm25", "dense"])})
    import socket

    stale.set_user_attr("worker", f"{socket.gethostname()}:999999999")
    assert recover_stale_trials(reopened) == 1
    run_study(reopened, CHR2, factory(tiny_retriever), tiny_questions, accuracy, ["bm25", "dense"], trials=3)
    states = [t.state for t in open_study("chr-test", None, seed=3, directory=tmp_path).trials]
    assert states.count(TrialState.COMPLETE) == 3 and states.count(TrialState.FAIL) == 1
    assert (tmp_path / "chr-test.journal").is_file()

    rows = study_report(reopened, tmp_path)
    assert rows and rows[0]["value"] == pytest.approx(1 / 3)  # the dummy answers B to all three
    assert (tmp_path / "chr-test-history.png").is_file()


def test_trial_params_describe_the_untuned_program():
    from hyporag.programs.hcqr import HCQRConfig

    reading = {"answer_mode": "joint", "on_demand": False}  # how the reader reads: searched for every method
    assert HCQRConfig(per_query_k=3).trial_params("bm25", ["bm25", "dense"]) == {
        "mode": "bm25", **reading, "per_query_k": 3, "merge_policy": "round_robin", "hypothesis_from": "generated"}
    chr_linear = CHRConfig(mode="dense", schedule="linear", lam_min=0.1, lam_max=0.9)
    assert chr_linear.trial_params("bm25", ["bm25"]) == {"mode": "bm25", **reading, "hypothesis_from": "generated",
                                                         "schedule": "linear", "lam_min": 0.1, "lam_max": 0.9,
                                                         "tau": 0.7, "steepness": 10.0}
    trial = optuna.trial.FixedTrial(chr_linear.trial_params("bm25", ["bm25"]))
    assert chr_linear.suggest(trial, ["bm25"]) == chr_linear.replace(mode="bm25")  # the search space round-trips
    differential = CHRConfig(hypothesis_from="reader", answer_mode="per-passage", retrieve_below=0.7, mix="loglinear")
    params = differential.trial_params("bm25", ["bm25"])
    assert params["on_demand"] is True and params["retrieve_below"] == 0.7 and params["mix"] == "loglinear"
    assert differential.suggest(optuna.trial.FixedTrial(params), ["bm25"]) == differential.replace(mode="bm25")


def test_a_trial_whose_questions_all_error_fails_with_its_error(tiny_questions, tmp_path):
    optuna.logging.set_verbosity(optuna.logging.ERROR)

    class Broken:
        def __call__(self, question, options):
            raise RuntimeError("program bug in retrieve")

    study = open_study("broken", None, seed=0, directory=tmp_path)
    logged = []
    failed = run_study(study, CHR2, lambda config: Broken(), tiny_questions, accuracy, ["bm25"], trials=2,
                       log=logged.append)
    assert failed == 2 and [t.state for t in study.trials] == [TrialState.FAIL, TrialState.FAIL]
    assert all(t.user_attrs["error"] == "RuntimeError: program bug in retrieve" for t in study.trials)
    assert all(t.user_attrs["errors"] == 3 for t in study.trials) and "all 3 questions errored" in logged[0]
    from hyporag.foundation.errors import HyporagError
    from hyporag.optimizers.study import best_trial

    with pytest.raises(HyporagError, match="2 failed, first error: RuntimeError: program bug"):
        best_trial(study)


def test_trials_run_in_threads_with_the_callers_dspy_context(tiny_retriever, tiny_questions, tmp_path):
    import threading

    import dspy

    seen: set[int] = set()

    class Recording:
        def __init__(self, inner):
            self.inner = inner

        def __call__(self, question, options):
            seen.add(threading.get_ident())
            return self.inner(question=question, options=options)

    lm = DummyLM(dict(REPLIES))
    study = open_study("threads", None, seed=0, directory=tmp_path)
    make = lambda config: Recording(make_program("chr", retriever=tiny_retriever, config=config))  # noqa: E731
    with dspy.context(lm=lm):  # no roles: the trial's workers must see this LM
        run_study(study, CHR2, make, tiny_questions * 2, accuracy, ["bm25"], trials=1, threads=2,
                  report_every=6)
    trial = study.trials[0]
    assert trial.state == TrialState.COMPLETE and trial.user_attrs["errors"] == 0
    assert trial.value == pytest.approx(1 / 3) and len(seen) == 2


def test_a_study_keeps_what_its_trial_values_mean_and_refuses_to_mix(tiny_questions):
    from hyporag.foundation.errors import ConfigError
    from hyporag.optimizers.study_identity import check_study_identity, study_identity

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name="s", direction="maximize")
    mine = study_identity("chr", "accuracy", "accuracy", tiny_questions, CHR2.to_dict(), ["bm25"], {"answer": "x"})
    check_study_identity(study, mine, "mem")
    check_study_identity(study, mine, "mem")  # the same settings resume
    edited = [tiny_questions[0].copy(answer="C"), *tiny_questions[1:]]  # an edited gold is another validation set
    with pytest.raises(ConfigError, match="validation"):
        check_study_identity(study, study_identity("chr", "accuracy", "accuracy", edited, CHR2.to_dict(), ["bm25"],
                                                   {"answer": "x"}), "mem")
    older = optuna.create_study(study_name="old", direction="maximize")  # before identities: its method only
    older.set_user_attr("method", "hcqr")
    older.add_trial(optuna.trial.create_trial(value=0.5))
    with pytest.raises(ConfigError, match="holds trials of hcqr, not chr"):
        check_study_identity(older, mine, "mem")


class RecordingTrial:
    """What score_trial tells Optuna: the values the pruner compares, and the attributes it keeps."""

    number = 0

    def __init__(self) -> None:
        self.reported: list[float] = []
        self.attrs: dict = {}

    def report(self, value: float, step: int) -> None:
        self.reported.append(value)

    def should_prune(self) -> bool:
        return False

    def set_user_attr(self, key: str, value) -> None:
        self.attrs[key] = value


def test_the_pruner_compares_accuracy_without_its_tie_break(monkeypatch, tiny_questions):
    """Two trials right on the same questions but with another belief in the gold option report the same values
    to the pruner (it would otherwise stop the one a hair less sure after 5 questions); their final values differ."""
    metric = objective_metric("accuracy", accuracy)
    finals, reports = [], []
    for belief in (-0.5, -2.0):
        rows = [{"question_id": e.id, "score": float(i % 2 == 0) + metric.tie_break(belief), "correct": i % 2 == 0,
                 "log_p_gold": belief, "error": None} for i, e in enumerate(tiny_questions)]
        monkeypatch.setattr(tune_module, "answer_all", lambda programs, chunk, threads, metric, sink, rows=rows:
                            [rows.pop(0) for _ in chunk])
        trial = RecordingTrial()
        finals.append(score_trial(None, tiny_questions, metric, trial, report_every=1))
        reports.append(trial.reported)
    assert reports[0] == reports[1] == [1.0, 0.5]
    assert trial.attrs["per_question"] == [1.0, 0.0, 1.0]  # what the sequential pruner pairs: no tie-break either
    assert finals[0] > finals[1] and abs(finals[0] - finals[1]) < 1e-3
    # under log-p-gold the belief is the objective itself, so the pruner sees it
    assert objective_metric("log-p-gold", accuracy).tie_break(-0.5) == 0.0


def test_the_pull_objective_is_refused_where_the_search_cannot_move_a_pull(tiny_retriever, tiny_corpus_dir,
                                                                             tmp_path):
    """A pull is a passage's own effect on the reader: mixing rules cannot move it, and cot reads no passage. Refused
    in one line before the study exists; a search over retriever modes may go on."""
    import hyporag
    from hyporag.foundation.errors import ConfigError
    from hyporag.jobs.optimizing import refuse_unreadable_objective
    from hyporag.jobs.run_config import RunConfig
    from hyporag.jobs.settings import TuneSettings
    from tests.conftest import QUESTIONS

    examples = [{**q, "id": f"{q['id']}-{n}"} for n in range(2) for q in QUESTIONS]

    def tune(method: str, modes: str | None = None):
        run = RunConfig(corpus=str(tiny_corpus_dir), index_dir=str(tiny_retriever.directory),
                        program_settings={"budget": 2, "answer_mode": "per-passage"})
        settings = TuneSettings(method=method, study="s", storage=str(tmp_path / "s.journal"), trials=1,
                                objective="pull", modes=modes)
        return hyporag.tune(settings, run, roles=dummy_roles(REPLIES), examples=examples)

    with pytest.raises(ConfigError, match=r"rag's search space here \(mode, answer_mode, on_demand, mix, "
                                          r"mix_temperature, prior_weight\) cannot move a passage's pull"):
        tune("rag", modes="bm25")
    with pytest.raises(ConfigError, match="cot retrieves nothing, so there is no passage to score"):
        tune("cot")
    assert not (tmp_path / "s.journal").exists()
    assert tune("rag", modes="bm25,dense").trials == 1  # two modes: which passages are read can change
    probe = make_program("chr", retriever=tiny_retriever, roles=dummy_roles(REPLIES), config=CHR2)
    with pytest.raises(ConfigError, match=r"give --answer per-passage \(chr answers joint\)"):
        refuse_unreadable_objective("pull", probe, ["bm25"])
    refuse_unreadable_objective("accuracy", probe, ["bm25"])
