"""`hyporag.fit` end to end with DummyLM: every stage, held-out never seen by an optimizer, resume skips stages;
and the project file's per-command tables."""

from __future__ import annotations

import json
from pathlib import Path

import dspy
import pytest
from dspy.utils import DummyLM

from hyporag import FitSettings, RunConfig, fit
from hyporag.cli import build_parser, run_config
from hyporag.cli.common import load_settings
from hyporag.foundation.errors import HyporagError
from hyporag.lm.client import LMRoles
from tests.conftest import PASSAGES, chr_replies, dummy_roles, write_jsonl

REPLIES = chr_replies("A")


class SharedDummyLM(DummyLM):
    """One history for the LM and the copies teleprompters make of programs (and of the LMs inside them)."""

    def __deepcopy__(self, memo):
        return self


def fit_args(tmp_path, run: dict | None = None, **settings):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": i, "title": t, "contents": c} for i, t, c in PASSAGES])
    questions = [{"id": f"q{i}", "question": f"Which cells secrete hormone {i}?",
                  "options": {"A": "Beta cells", "B": "Alpha cells"}, "answer": "A" if i % 3 else "B"}
                 for i in range(12)]
    dataset = write_jsonl(tmp_path / "dev.jsonl", questions)
    config = RunConfig(dataset=str(dataset), corpus=str(corpus), **(run or {}),
                       program_settings={"budget": 2, "domain": "endocrinology"})
    return FitSettings(method="chr", out=str(tmp_path / "fit"), **{"trials": 2, **settings}), config


def test_fit_runs_every_stage_and_a_rerun_skips_them(tmp_path, capsys):
    args, config = fit_args(tmp_path)
    lm = SharedDummyLM(dict(REPLIES))
    state = fit(args, config, LMRoles.from_lms(lm)).state
    assert list(state["stages"]) == ["index", "split", "tune", "compile", "freeze", "evaluate", "report"]
    split = state["stages"]["split"]
    assert (len(split["train"]), len(split["val"]), len(split["heldout"])) == (6, 3, 3)
    assert not set(split["heldout"]) & (set(split["train"]) | set(split["val"]))
    calls = {name: s["lm_calls"] for name, s in state["stages"].items()}
    assert {n: c for n, c in calls.items() if n in ("index", "split", "freeze", "report")} == dict.fromkeys(
        ("index", "split", "freeze", "report"), 0)  # only tune, compile and evaluate call an LM
    assert state["stages"]["tune"]["lm_calls"] > 0 and state["stages"]["evaluate"]["lm_calls"] > 0
    out = tmp_path / "fit"
    manifest = json.loads((out / "artifact" / "manifest.json").read_text())
    assert manifest["program_settings"]["domain"] == "endocrinology" and manifest["splits"]["heldout"] == 3
    # no held-out question reached an optimizer: the prompts of the tune and compile stages never name one
    heldout_questions = {f"hormone {q[1:]}?" for q in split["heldout"]}
    optimizer_calls = state["stages"]["tune"]["lm_calls"] + state["stages"]["compile"]["lm_calls"]
    seen = " ".join(str(h["messages"]) for h in lm.history[:optimizer_calls])
    assert optimizer_calls > 0 and not any(q in seen for q in heldout_questions)
    rows = [json.loads(line) for line in (out / "heldout" / "results.jsonl").read_text().splitlines()]
    assert {r["method"] for r in rows} == {"rag", "untuned", "tuned"} and len(rows) == 9
    assert "2 finished trials" in state["stages"]["tune"]["summary"]  # not "of 3" with a failed or extra trial
    heldout = json.loads((out / "heldout" / "run.json").read_text())  # what `hyporag view FIT_DIR` needs
    assert heldout["index_dir"] and (Path(heldout["index_dir"]) / "passages.sqlite").is_file()
    assert heldout["budget"] == 2 and heldout["retriever"] and heldout["program"]["tuned"]["protocol"]
    assert "endocrinology" in str(lm.history[0]["messages"]) and "medical" not in str(lm.history[0]["messages"])
    report = (out / "report.md").read_text()
    assert "| tuned vs untuned |" in report and "| tune |" in report and (out / "report.json").is_file()

    calls = len(lm.history)
    again = fit(args, config, LMRoles.from_lms(lm)).state  # a killed or finished fit: done stages are skipped
    assert len(lm.history) == calls and again["stages"] == state["stages"]
    assert "skipped" in capsys.readouterr().err


def test_fit_refuses_another_fit_in_the_same_directory(tmp_path):
    args, config = fit_args(tmp_path)
    fit(args, config, dummy_roles(REPLIES))
    args, config = fit_args(tmp_path, trials=3)
    with pytest.raises(HyporagError, match="holds a fit with other settings"):
        fit(args, config, dummy_roles(REPLIES))


def test_project_file_settings_and_flags_on_top(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hyporag.toml").write_text('dataset = "dev.jsonl"\nbudget = 3\nlm = "openai/m"\nlam = 0.5\n')
    args = build_parser().parse_args(["eval", "--budget", "4"])
    config = run_config(args)
    assert config.data.dataset == "dev.jsonl" and config.lms.lm == "openai/m"
    assert config.program_settings == {"budget": 4, "lam": 0.5}  # the flag wins over the file
    (tmp_path / "hyporag.toml").write_text('datset = "typo.jsonl"\n')
    with pytest.raises(HyporagError, match="hyporag.toml: unknown setting 'datset'"):
        run_config(build_parser().parse_args(["eval"]))


def test_each_command_reads_its_own_table_of_the_project_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hyporag.toml").write_text('dataset = "dev.jsonl"\nbudget = 3\n\n[fit]\ntrials = 3\nout = "fits/a"\n'
                                           'budget = 4\nsplits = [0.6, 0.2, 0.2]\n\n[eval]\nout = "runs/e"\n')
    config, settings = load_settings(build_parser().parse_args(["fit", "--method", "chr"]), FitSettings)
    assert (settings.trials, settings.out, settings.splits, settings.method) == (3, "fits/a", (0.6, 0.2, 0.2), "chr")
    assert config.program_settings["budget"] == 4 and config.data.dataset == "dev.jsonl"  # the table over the top level
    config, settings = load_settings(build_parser().parse_args(["fit", "--trials", "5", "--out", "x"]), FitSettings)
    assert (settings.trials, settings.out) == (5, "x")  # flags over the table
    assert run_config(build_parser().parse_args(["eval"])).control.out == "runs/e"
    for text, message in (('trials = 3\n', "trials is a setting of tune and fit; put it under \\[tune\\]"),
                          ('[fitt]\ntrials = 3\n', "unknown table \\[fitt\\]"),
                          ('[fit]\ntrails = 3\n', "\\[fit\\]: unknown setting 'trails'"),
                          ('[fit]\ntrials = "3"\n', "\\[fit\\]: trials: must be a whole number")):
        (tmp_path / "hyporag.toml").write_text(text)
        with pytest.raises(HyporagError, match=message):
            load_settings(build_parser().parse_args(["fit"]), FitSettings)


def test_a_rerun_after_an_edited_gold_is_refused_not_answered_from_old_stages(tmp_path):
    args, config = fit_args(tmp_path)
    fit(args, config, LMRoles.from_lms(SharedDummyLM(dict(REPLIES))))
    args, config = fit_args(tmp_path)  # (writes dev.jsonl afresh) the same settings; then one gold is edited
    dataset = tmp_path / "dev.jsonl"
    rows = [json.loads(line) for line in dataset.read_text().splitlines()]
    rows[-1]["answer"] = "B" if rows[-1]["answer"] == "A" else "A"
    write_jsonl(dataset, rows)
    lm = SharedDummyLM(dict(REPLIES))
    with pytest.raises(HyporagError, match="the questions of .*dev.jsonl have changed since this fit"):
        fit(args, config, LMRoles.from_lms(lm))
    assert not lm.history


def test_fit_checks_every_split_fits_the_context_before_the_first_stage(tmp_path):
    args, config = fit_args(tmp_path, {"context_tokens": 40})
    lm = SharedDummyLM(dict(REPLIES))
    with pytest.raises(HyporagError, match="dev.jsonl:\\d+: .*answer prompt needs up to about \\d+ tokens, the "
                                           "model's context is 40"):
        fit(args, config, LMRoles.from_lms(lm))
    assert not lm.history


@pytest.mark.parametrize(("after", "kept"), [(0.25, "tuned"), (0.5, "tuned"), (0.75, "compiled")])
def test_the_teleprompters_prompts_are_kept_only_when_they_score_higher_on_validation(tmp_path, monkeypatch, after,
                                                                                       kept):
    """Bootstrap's demos lowered validation for 3 of 4 candidates of a real fit: the frozen program must then be
    the tuned one (shorter prompts), and a tie keeps it too."""
    import copy

    from hyporag.jobs import fit as fit_stages
    from hyporag.optimizers.teleprompter import CompileResult

    def fake_compile(start, train, val, optimizer, metric, roles, **kwargs):
        compiled = copy.deepcopy(start)
        for _, predictor in compiled.named_predictors():
            predictor.demos = [dspy.Example(question="DEMO-MARKER", answer="A")]
        return CompileResult(compiled, 0.5, after, 0.1, 0, {"name": optimizer})

    monkeypatch.setattr(fit_stages, "compile_program", fake_compile)
    args, config = fit_args(tmp_path, optimizer="bootstrap")
    state = fit(args, config, LMRoles.from_lms(SharedDummyLM(dict(REPLIES)))).state
    stage = state["stages"]["compile"]
    assert stage["kept"] == kept and stage["compiled_after"] == after
    assert stage["after"] == (after if kept == "compiled" else 0.5)
    manifest = json.loads((tmp_path / "fit" / "artifact" / "manifest.json").read_text())
    assert manifest["optimizer"]["prompts_kept"] == kept
    assert ("DEMO-MARKER" in (tmp_path / "fit" / "artifact" / "program.json").read_text()) == (kept == "compiled")


def test_a_fit_stopped_after_its_tune_and_compile_knows_this_models_speed(tmp_path, monkeypatch):
    """The tune and compile stages' own calls are measured: a fit stopped after them has a time estimate on its
    resume, not "time unknown until this model has run here once"."""
    from hyporag.jobs.fit_plan import Deadline, FitStopped
    from hyporag.jobs.speed import seconds_per_call

    def out_of_time_at_freeze(self, where: str) -> None:
        if where == "freeze":
            raise FitStopped(where, self.minutes)

    args, config = fit_args(tmp_path, max_minutes=30)
    roles = LMRoles.from_lms(SharedDummyLM(dict(REPLIES)))
    assert seconds_per_call(roles, 2) is None
    monkeypatch.setattr(Deadline, "check", out_of_time_at_freeze)
    result = fit(args, config, roles)
    assert result.stopped and {"tune", "compile"} <= set(result.state["stages"])
    assert seconds_per_call(roles, 2) is not None and seconds_per_call(roles, 2)[1] == 2


def test_a_limit_picks_the_questions_eval_picks_not_the_files_first(tmp_path):
    """A file sorted by topic (or a comma-joined dataset) cut at its first N would leave whole topics out of the fit's
    train, validation and held-out questions; `--limit` means a seeded shuffle, then N, for every command."""
    from hyporag.jobs.builders import select_examples
    from hyporag.jobs.fit_plan import fit_questions
    from hyporag.questions.datasets import load_benchmark

    args, config = fit_args(tmp_path, run={"limit": 6})
    loaded, examples, _ = fit_questions(args, config)
    chosen = [e.id for e in examples]
    assert chosen == [e.id for e in select_examples(load_benchmark(config.data.dataset).examples, 6, 0)]
    assert chosen != [f"q{i}" for i in range(6)] and len(chosen) == 6
