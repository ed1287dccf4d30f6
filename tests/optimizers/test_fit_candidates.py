"""`hyporag fit --methods`: candidates tuned on one split, one chosen on validation by the stated rule (a tie keeps
rag; a candidate that wins beyond chance replaces it), confirmed on held-out, frozen with the evidence; resumable
after a kill between candidates; the whole job's cost printed before any LM call; an unknown candidate refused."""

from __future__ import annotations

import json
import re

import pytest

import hyporag
from hyporag import FitSettings, RunConfig, fit
from hyporag.foundation.errors import ConfigError
from hyporag.lm.client import LMRoles
from hyporag.programs import MCQProgram
from hyporag.programs.registry import METHODS
from hyporag.retrieval.hit import Hit
from tests.conftest import PASSAGES, write_jsonl
from tests.optimizers.test_fit import REPLIES, SharedDummyLM


def gold(i: int) -> str:
    return "A" if i % 3 else "B"


def project(tmp_path, n: int, **settings):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": i, "title": t, "contents": c} for i, t, c in PASSAGES])
    dataset = write_jsonl(tmp_path / "dev.jsonl", [
        {"id": f"q{i}", "question": f"Which cells secrete hormone {i}?", "options": {"A": "Beta cells",
                                                                                     "B": "Alpha cells"},
         "answer": gold(i)} for i in range(n)])
    run = RunConfig(dataset=str(dataset), corpus=str(corpus), program_settings={"budget": 2})
    return FitSettings(out=str(tmp_path / "fit"), trials=1, optimizer=None, **settings), run


class Oracle(MCQProgram):
    """A candidate built to win: its one passage tells the (dummy) reader the gold letter."""

    method = "oracle"
    estimated_calls = 1.0

    def retrieve(self, question, options, meter, trace):
        letter = gold(int(re.search(r"hormone (\d+)", question).group(1)))
        return [Hit(id=f"oracle-{letter}", title="oracle", contents=f"ORACLE-SAYS-{letter}", score=1.0)]


class Misleader(MCQProgram):
    """A candidate built to lose: its one passage tells the reader the wrong letter."""

    method = "misleader"
    estimated_calls = 1.0

    def retrieve(self, question, options, meter, trace):
        letter = "A" if gold(int(re.search(r"hormone (\d+)", question).group(1))) == "B" else "B"
        return [Hit(id=f"misleader-{letter}", title="misleader", contents=f"ORACLE-SAYS-{letter}", score=1.0)]


@pytest.fixture
def oracle():
    hyporag.register_method("oracle", Oracle)
    hyporag.register_method("misleader", Misleader)
    yield
    METHODS.pop("oracle", None)
    METHODS.pop("misleader", None)


def replies() -> dict:
    return {"ORACLE-SAYS-A": {"answer": "A"}, "ORACLE-SAYS-B": {"answer": "B"}, **REPLIES}


def test_a_tie_keeps_the_simpler_program_and_the_artifact_says_why(tmp_path, capsys):
    settings, run = project(tmp_path, 48, methods=("rag", "chr"))
    result = fit(settings, run, LMRoles.from_lms(SharedDummyLM(replies())))
    assert result.state["stages"]["validate"]["chosen"] == "rag"  # chr answers as rag does: no reason to pay more
    manifest = json.loads((result.artifact / "manifest.json").read_text())
    assert manifest["method"] == "rag" and manifest["selection"]["candidates"] == ["rag", "chr"]
    assert "by a betting test" in manifest["selection"]["rule"]["text"]
    report = (result.out / "report.md").read_text()
    assert "Rule:" in report and "rag was kept" in report and "| chr | tune |" in report
    page = (result.out / "report.html").read_text()  # the fit's page: the same tables, linked to both runs' pages
    assert "<td>rag (chosen)</td>" in page and "rag was kept" in page and 'href="heldout/report.html"' in page
    assert set(result.heldout_accuracy) == {"rag", "cot", "chr"}
    assert hyporag.load_program(result.artifact, roles=LMRoles.from_lms(SharedDummyLM(replies()))).method == "rag"


def test_a_candidate_that_wins_beyond_chance_replaces_rag(tmp_path, oracle):
    """The race drops misleader (wrong on every question) behind oracle (right on every one) early, and it is never
    tuned; rag, the simplest, is raced to the end though oracle is surely better (the pick is measured against it);
    oracle wins on validation with the error guarantee and is confirmed on held-out."""
    settings, run = project(tmp_path, 160, methods=("rag", "oracle", "misleader"))
    result = fit(settings, run, LMRoles.from_lms(SharedDummyLM(replies())))
    raced = result.state["stages"]["race"]
    assert raced["survivors"] == ["rag", "oracle"] and raced["dropped"]["misleader"]["behind"] == "oracle"
    dropped_at = raced["dropped"]["misleader"]["question"]
    assert dropped_at <= 20 and raced["questions"]["misleader"] == dropped_at  # asked nothing after its drop
    assert raced["questions"]["oracle"] == raced["questions"]["rag"] == raced["race_questions"] == 40  # validation
    assert not (result.out / "candidates" / "misleader").exists()  # never tuned or compiled
    selection = result.state["stages"]["validate"]
    assert selection["chosen"] == "oracle" and selection["scores"]["oracle"]["accuracy"] == 1.0
    assert result.heldout_accuracy["oracle"] == 1.0 > result.heldout_accuracy["rag"]
    assert json.loads((result.artifact / "manifest.json").read_text())["method"] == "oracle"
    report = (result.out / "report.md").read_text()  # held-out paired against the pick: accuracy, log p, margin
    assert "| held-out | accuracy | Δ accuracy vs oracle | McNemar p |" in report and "| oracle (chosen) |" in report
    assert f"| misleader | {dropped_at} | {dropped_at} | race, question {dropped_at}, behind oracle" in report
    rag_vs_oracle = json.loads((result.out / "report.json").read_text())["heldout_paired_vs_chosen"]["rag"]
    assert rag_vs_oracle["accuracy"]["mean"] < 0 and 0 < rag_vs_oracle["accuracy"]["mcnemar_p"] <= 1


def test_a_fit_killed_between_candidates_resumes_where_it_stopped(tmp_path, monkeypatch):
    import hyporag.jobs.fit as fit_module

    settings, run = project(tmp_path, 48, methods=("rag", "chr"))
    real = fit_module.fit_one

    def killed_on_chr(one, *args, **kwargs):
        if one.method == "chr":
            raise KeyboardInterrupt
        return real(one, *args, **kwargs)

    monkeypatch.setattr(fit_module, "fit_one", killed_on_chr)
    with pytest.raises(KeyboardInterrupt):
        fit(settings, run, LMRoles.from_lms(SharedDummyLM(replies())))
    assert (tmp_path / "fit" / "candidates" / "rag" / "artifact" / "manifest.json").is_file()
    rag_record = (tmp_path / "fit" / "candidates" / "rag" / "fit.json").read_bytes()
    monkeypatch.setattr(fit_module, "fit_one", real)
    result = fit(settings, run, LMRoles.from_lms(SharedDummyLM(replies())))
    assert result.state["stages"]["report"] and result.state["stages"]["validate"]["chosen"] == "rag"
    assert (tmp_path / "fit" / "candidates" / "rag" / "fit.json").read_bytes() == rag_record  # not redone
    assert (tmp_path / "fit" / "candidates" / "chr" / "artifact" / "manifest.json").is_file()


def test_the_cost_is_printed_before_any_call_and_an_unknown_candidate_is_refused(tmp_path, capsys):
    class Refusing(SharedDummyLM):
        def forward(self, *args, **kwargs):
            raise RuntimeError("no call was expected yet")

    with pytest.raises(ConfigError, match="fit.methods: unknown method 'nope'"):  # when the settings are made
        project(tmp_path, 12, methods=("rag", "nope"))
    with pytest.raises(ConfigError, match="fit.method: unknown method 'chrr'"):
        FitSettings(method="chrr")
    assert not (tmp_path / "fit").exists()
    settings, run = project(tmp_path, 12, methods=("rag", "chr"))
    with pytest.raises(Exception, match="no call was expected yet|errored"):
        fit(settings, run, LMRoles.from_lms(Refusing(replies())))
    err = capsys.readouterr().err
    assert err.index("fit plan: 2 candidates (rag, chr)") < err.index("[1/7] index")
    assert re.search(r"at most [\d,]+ LM calls \(rag [\d,]+, chr [\d,]+, shared [\d,]+\)", err)


def test_the_time_estimate_uses_the_speed_measured_at_the_fits_budget(tmp_path, monkeypatch):
    """A B = 15 evaluation's seconds per call must not price a B = 4 fit: the record is kept per budget, and
    the estimate says when it had to borrow the nearest budget's."""
    from hyporag.jobs.fit_candidates import cost_estimate
    from hyporag.jobs.speed import record_speed, seconds_per_call

    monkeypatch.setenv("HYPORAG_CACHE_DIR", str(tmp_path / "cache"))
    roles = LMRoles.from_lms(SharedDummyLM(replies()))
    assert seconds_per_call(roles, 4) is None
    record_speed(roles, {"methods": [{"n": 10, "calls_per_q": 1, "seconds_per_q": 50.0}]}, 15)
    assert seconds_per_call(roles, 4) == (50.0, 15)
    record_speed(roles, {"methods": [{"n": 10, "calls_per_q": 2, "seconds_per_q": 20.0}]}, 4)
    assert seconds_per_call(roles, 4) == (10.0, 4) and seconds_per_call(roles, 15) == (50.0, 15)
    settings, _ = project(tmp_path, 3, methods=("rag",))
    sizes = {"train": 4, "val": 4, "heldout": 4}
    assert "measured at B = 15" not in cost_estimate(["rag"], sizes, settings, (50.0, 15), 15)["text"]
    assert "measured at B = 15, this fit runs B = 4" in cost_estimate(["rag"], sizes, settings, (50.0, 15), 4)["text"]
    for _ in range(30):  # the record follows the current speed: old calls fade past KEEP_CALLS
        record_speed(roles, {"methods": [{"n": 10, "calls_per_q": 1, "seconds_per_q": 5.0}]}, 4)
    assert seconds_per_call(roles, 4)[0] < 6.0


def test_candidates_sharing_one_storage_each_get_their_own_study(tmp_path):
    """Two candidates (and two fits) in one shared storage never tune in one study: each is named by what its
    trial values mean, so a candidate's best trial is its own."""
    import optuna

    shared = tmp_path / "shared.journal"
    settings, run = project(tmp_path, 48, methods=("rag", "chr"), storage=str(shared))
    fit(settings, run, LMRoles.from_lms(SharedDummyLM(replies())))
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(shared)))
    names = sorted(s.study_name for s in optuna.get_all_study_summaries(storage))
    assert [n.rsplit("-", 1)[0] for n in names] == ["fit-chr", "fit-rag"]
    chr_study, rag_study = (optuna.load_study(study_name=n, storage=storage) for n in names)
    assert chr_study.user_attrs["hyporag_identity"]["method"] == "chr"
    assert rag_study.user_attrs["hyporag_identity"]["method"] == "rag"
    assert all("schedule" in t.params for t in chr_study.trials)  # chr's search space only
    assert not any("schedule" in t.params for t in rag_study.trials)


def test_a_selection_setting_given_on_resume_chooses_again_and_other_settings_are_named(tmp_path, oracle, capsys):
    settings, run = project(tmp_path, 160, methods=("rag", "oracle"))
    roles = LMRoles.from_lms(SharedDummyLM(replies()))
    assert fit(settings, run, roles).state["stages"]["validate"]["chosen"] == "oracle"
    capsys.readouterr()
    capped = fit(settings.replace(max_calls_per_question=0.5), run, roles)
    assert "the selection rule changed (max_calls_per_question None then, 0.5 now)" in capsys.readouterr().err
    assert capped.state["stages"]["validate"]["chosen"] == "rag"
    assert capped.state["stages"]["validate"]["verdicts"]["oracle"] == "over the LM-call cap"
    manifest = json.loads((capped.artifact / "manifest.json").read_text())
    assert manifest["method"] == "rag" and manifest["selection"]["rule"]["max_calls_per_question"] == 0.5
    with pytest.raises(hyporag.foundation.errors.HyporagError, match=r"other settings \(trials: 1 then, 2 now\)"):
        fit(settings.replace(trials=2), run, roles)


def test_a_validation_split_too_small_for_the_rule_is_said_in_the_plan(tmp_path, capsys):
    from hyporag.optimizers.selection import SelectionRule

    rule = SelectionRule()
    # a candidate better than rag on every question by the most the measure allows: the betting test (alpha 0.05
    # over one pair) says better at the 7th question, later as more candidates share alpha
    assert rule.smallest_decisive() == 7 and rule.smallest_decisive(4) == 9
    assert rule.undecidable(7) is None and "needs 7" in rule.undecidable(6)
    settings, run = project(tmp_path, 14, methods=("rag", "chr"))
    fit(settings, run, LMRoles.from_lms(SharedDummyLM(replies())))
    err = capsys.readouterr().err
    assert "on 4 validation question(s) the rule can only keep rag" in err and "so only rag is tuned" in err
    assert not (tmp_path / "fit" / "candidates" / "chr").exists()  # it could not have been chosen: not paid for
    assert "Give --splits 0.33,0.50,0.17, or a dev set of at least 28 questions" in err  # 7 of 14 is a 50% share
    assert err.index("can only keep rag") < err.index("fit: candidate rag")  # said before anything is tuned
    report = (tmp_path / "fit" / "report.md").read_text()  # says what the plan said: chr was never in the running
    assert "**Validation split too small**" in report and "maximised `accuracy`" in report
    assert "| chr | 0 | 0 | not raced or tuned: the validation split is too small" in report
    assert "went on to tuning" not in report.split("| chr |")[1].splitlines()[0]
    assert "no candidate beat it beyond chance" not in report and "rag was kept (no other candidate was validated)" \
        in report
    from hyporag.jobs.fit_candidates import too_few_hint  # on 30 questions a larger validation share would do

    assert too_few_hint(rule, settings.splits, 30).startswith("Give --splits 0.51,0.23,0.26, or a dev set")


class Broken(MCQProgram):
    """A candidate that errors on every question (a bug in a user's method)."""

    method = "broken"

    def retrieve(self, question, options, meter, trace):
        raise RuntimeError("index shard 3 is missing")


def test_a_candidate_that_errors_on_every_question_is_dropped_and_the_fit_completes(tmp_path, capsys):
    hyporag.register_method("broken", Broken)
    try:
        settings, run = project(tmp_path, 80, methods=("rag", "chr", "broken"))
        result = fit(settings, run, LMRoles.from_lms(SharedDummyLM(replies())))
    finally:
        METHODS.pop("broken", None)
    raced = result.state["stages"]["race"]
    assert raced["dropped"]["broken"]["by"] == "errors" and "index shard 3 is missing" in \
        raced["dropped"]["broken"]["error"]
    assert raced["questions"]["broken"] == 3 and raced["survivors"] == ["rag", "chr"]  # asked no further
    assert not (tmp_path / "fit" / "candidates" / "broken").exists()
    assert (result.artifact / "manifest.json").is_file() and result.state["stages"]["report"]
    report = (result.out / "report.md").read_text()
    assert "| broken | 3 | 0 | race, question 3: every answer errored (RuntimeError: index shard 3 is missing)" \
        in report


def test_a_candidate_whose_tuning_fails_is_dropped_with_its_reason(tmp_path, monkeypatch, capsys):
    """Past the race (here the race is told not to drop for errors), a candidate whose every trial errors fails its
    own fit; the fit records why and completes with the others, instead of dying after tuning them."""
    from hyporag.jobs import fit_race

    monkeypatch.setattr(fit_race, "ERRORED_AFTER", 10**6)
    hyporag.register_method("broken", Broken)
    try:
        settings, run = project(tmp_path, 80, methods=("rag", "broken"))
        result = fit(settings, run, LMRoles.from_lms(SharedDummyLM(replies())))
    finally:
        METHODS.pop("broken", None)
    failed = result.state["stages"]["candidates"]["failed"]
    assert "no finished trial" in failed["broken"] and result.state["stages"]["validate"]["chosen"] == "rag"
    assert "fit: candidate broken dropped: its fit failed" in capsys.readouterr().err
    assert "| broken |" in (result.out / "report.md").read_text() and "its tuning failed" in \
        (result.out / "report.md").read_text()
