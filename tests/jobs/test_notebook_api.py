"""The Python API as a notebook user calls it: examples in any reasonable shape are checked and normalised as file
rows are (one-line errors naming the field), and a job leaves the user's DSPy cache exactly as it found it."""

from __future__ import annotations

import dspy
import pytest
from dspy.utils import DummyLM

import hyporag
from hyporag import CHR, DataSettings, RunConfig
from hyporag.foundation.errors import DataError
from hyporag.lm.client import build_lm
from hyporag.testing import fake_openai
from tests.conftest import dummy_roles, write_jsonl

OPTIONS = {"A": "Pancreas", "B": "Kidney", "C": "Liver"}


def run(tmp_path, examples, answers="A"):
    roles = dummy_roles([{"answer": a} for a in answers * 5])
    return hyporag.evaluate(RunConfig(methods="cot", out=str(tmp_path / "run")), roles=roles, examples=examples,
                            progress=False)


def test_a_lower_case_letter_list_options_and_no_id_score_as_a_file_row_would(tmp_path):
    examples = [dspy.Example(question="Which organ makes insulin?", options=list(OPTIONS.values()), answer="a"),
                {"question": "Which organ makes renin?", "options": OPTIONS, "answer": "a"}]
    report = run(tmp_path, examples)
    assert report.accuracy("cot") == 1.0  # the model's A is the gold A, not a 0.000 against "a"
    assert report.summary("cot")["n"] == 2


@pytest.mark.parametrize(("given", "message"), [
    (dspy.Example(question="Which organ makes insulin?", options=OPTIONS, answer="Pancreas"),
     r"examples\[0\]: field 'answer' is 'PANCREAS', not one of the options ABC"),
    (dspy.Example(question="Which organ makes insulin?", options=OPTIONS, answer="E"),
     r"examples\[0\]: field 'answer' is 'E', not one of the options ABC"),
    (dspy.Example(question="Which organ makes insulin?", answer="A"), r"examples\[0\]: field 'options' is missing"),
    ({"options": OPTIONS, "answer": "A"}, r"examples\[0\]: field 'question' is missing or empty"),
    ("Which organ?", r"examples\[0\]: a str, not a dspy.Example or dict"),
])
def test_a_bad_example_is_one_line_naming_the_field_before_any_call(tmp_path, given, message):
    with pytest.raises(DataError, match=message):
        run(tmp_path, [given])
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_no_examples_and_duplicate_ids_are_refused_as_such(tmp_path):
    with pytest.raises(DataError, match=r"examples: no questions given"):
        run(tmp_path, [])
    twice = [{"id": "x", "question": "Q?", "options": OPTIONS, "answer": "A"}] * 2
    with pytest.raises(DataError, match=r"examples\[1\]: duplicate id 'x' \(also examples\[0\]\)"):
        run(tmp_path, twice)


def test_two_files_of_one_name_joined_are_refused_not_half_dropped(tmp_path):
    rows = [{"question": f"Q{i}?", "options": OPTIONS, "answer": "A"} for i in range(4)]
    first, second = write_jsonl(tmp_path / "a" / "q.jsonl", rows), write_jsonl(tmp_path / "b" / "q.jsonl", rows)
    from hyporag.questions.datasets import load_benchmark

    with pytest.raises(DataError, match=r"b/q.jsonl:1: question id 'q-1' is also .*a/q.jsonl:1"):
        load_benchmark(f"{first},{second}")
    with pytest.raises(DataError, match="ids must be unique across joined datasets"):
        load_benchmark(f"{first},{first}")


def test_a_job_leaves_the_users_dspy_cache_as_it_found_it(tmp_path):
    """The user's own cached LM keeps its cache (one server call for two identical calls) after hyporag ran with
    its cache off; dspy.cache is the very object it was, in the user's directory."""
    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(tmp_path / "mine"))
    before = dspy.cache
    with fake_openai(["m"]) as server:
        hyporag.evaluate(RunConfig(methods="cot", out=str(tmp_path / "run"), lm="openai/m",
                                   api_base=server.base(), api_key="k", no_cache=True),
                         examples=[{"question": "Q?", "options": OPTIONS, "answer": "A"}], progress=False)
        assert server.completions == 1
        assert dspy.cache is before and dspy.cache.disk_cache_dir == str(tmp_path / "mine")
        mine = dspy.LM("openai/m", api_base=server.base(), api_key="k", cache=True, num_retries=0)
        predict = dspy.Predict("question -> answer")
        with dspy.context(lm=mine, adapter=dspy.JSONAdapter()):
            predict(question="same")
            predict(question="same")
        assert server.completions == 2  # the user's second identical call was served from the user's cache


def test_hyporag_calls_use_its_identity_cache_while_the_users_stay_in_theirs(tmp_path):
    """Inside a call, hyporag's LM reaches hyporag's cache (a second run is free); the user's cache dir gets
    none of hyporag's entries."""
    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=False, disk_cache_dir=str(tmp_path / "mine"))
    before = dspy.cache
    with fake_openai(["m"]) as server:
        for out in ("a", "b"):
            hyporag.evaluate(RunConfig(methods="cot", out=str(tmp_path / out), lm="openai/m",
                                       api_base=server.base(), api_key="k"),
                             examples=[{"question": "Q?", "options": OPTIONS, "answer": "A"}], progress=False)
        assert server.completions == 1  # the second run came from hyporag's cache
    assert dspy.cache is before and len(before.disk_cache) == 0


def test_build_lm_pool_and_plain_lm_keep_their_model_names_apart(tmp_path):
    with fake_openai(["m"]) as a, fake_openai(["m"]) as b:
        one = build_lm("openai/m", api_base=[a.base(), b.base()], api_key="k")
        other = build_lm("openai/m", api_base=[b.base(), a.base(), a.base().replace("/v1", "/v1/")], api_key="k")
    assert one.model.startswith("openai/m@pool-") and one.model != build_lm("openai/m", api_base=a.base()).model
    assert other.model.startswith("openai/m@pool-")


class Mine(dspy.Module):
    """A user's own program: no hyporag base class, no retrieval fields, just an answer letter."""

    def __init__(self):
        super().__init__()
        self.predict = dspy.Predict("question, options -> answer")

    def forward(self, question, options):
        return self.predict(question=question, options=str(options))


def test_any_dspy_module_that_answers_a_letter_is_evaluated_as_the_readme_says(tmp_path):
    import json

    answering = DummyLM([{"answer": "A"}] * 4)
    report = hyporag.evaluate(RunConfig(out=str(tmp_path / "run")), programs={"mine": Mine()}, roles=answering,
                              examples=[{"question": "Q?", "options": OPTIONS, "answer": "A"},
                                        {"question": "R?", "options": OPTIONS, "answer": "B"}], progress=False)
    assert report.accuracy("mine") == 0.5
    recorded = json.loads((tmp_path / "run" / "run.json").read_text())["program"]["mine"]
    assert recorded == {"method": "user", "class": "tests.jobs.test_notebook_api.Mine", "runs_under": "answer"}


def test_a_plain_module_answers_with_the_roles_given_not_the_notebooks_lm(tmp_path):
    """The notebook's own global LM never answers for a run that records other roles; its calls are counted."""
    import json

    notebook, answering = DummyLM([{"answer": "B"}] * 4), DummyLM([{"answer": "A"}] * 4)
    questions = [{"question": "Q?", "options": OPTIONS, "answer": "A"}, {"question": "R?", "options": OPTIONS,
                                                                         "answer": "A"}]
    with dspy.context(lm=notebook):
        report = hyporag.evaluate(RunConfig(out=str(tmp_path / "run")), programs={"mine": Mine()}, roles=answering,
                                  examples=questions, progress=False)
    assert report.accuracy("mine") == 1.0 and notebook.history == [] and len(answering.history) == 2
    assert report.summary("mine")["calls_per_q"] == 1.0
    assert dspy.settings.lm is None  # the user's settings are as they were
    # with no global LM at all, the roles answer: no row errors
    report = hyporag.evaluate(RunConfig(out=str(tmp_path / "run2")), programs={"mine": Mine()},
                              roles=DummyLM([{"answer": "A"}] * 2), examples=questions, progress=False)
    assert report.summary("mine")["errors"] == 0
    assert json.loads((tmp_path / "run2" / "run.json").read_text())["lms"]["answer"] == "dummy"


def test_the_baseline_reports_compare_against_is_a_setting(tmp_path, tiny_corpus_dir):
    roles = dummy_roles([{"answer": "A"}] * 10)
    report = hyporag.evaluate(RunConfig(methods="cot,rag", baseline="cot", corpus=str(tiny_corpus_dir),
                                        out=str(tmp_path / "run"), program_settings={"budget": 2}), roles=roles,
                              examples=[{"question": "Q?", "options": OPTIONS, "answer": "A"}], progress=False)
    assert report.report["baseline"] == "cot" and set(report.report["paired_vs_rag"]) == {"rag"}
    assert report.summary("rag")["vs_rag_difference"] == 0.0 and report.summary("cot")["vs_rag_difference"] is None
    assert "Δ vs cot" in (tmp_path / "run" / "summary.md").read_text()


def test_run_settings_from_python_are_checked_as_a_project_files_are(tmp_path):
    from pathlib import Path

    from hyporag.foundation.errors import ConfigError

    assert RunConfig(methods=["cot", "rag"], out=Path(tmp_path)).method_names == ["cot", "rag"]
    for bad, message in ((dict(limit="2"), r"RunConfig.limit: must be a whole number, got '2'"),
                         (dict(limit=0), r"RunConfig.limit: must be 1 or more"),
                         (dict(dur="yes"), "RunConfig.dur: must be true"),
                         (dict(methods="cot,nope"), "unknown method 'nope'"),
                         (dict(colour="red"), "RunConfig: unknown setting 'colour'"),
                         (dict(methods=[("rag", CHR.Config())]), "RunConfig.methods: rag takes a ProgramConfig"),
                         (dict(data="mmlu"), "RunConfig.data: must be a DataSettings")):
        with pytest.raises(ConfigError, match=message):
            RunConfig(**bad)
    with pytest.raises(ConfigError, match=r"DataSettings.limit: must be a whole number, got '2'"):
        DataSettings(limit="2")


def test_a_run_is_its_groups_and_its_methods_typed_configs():
    """Settings by name land in their group; the run's methods are typed configs made once from the shared program
    settings (a config given typed is kept); new shared settings remake only the methods they made."""
    run = RunConfig(data=DataSettings(dataset="mmlu-med-dev"), limit=4, lm="openai/m", methods="cot,rag,chr",
                    budget=3, lam=0.5)
    assert (run.data.dataset, run.data.limit, run.lms.lm, run.setting("limit")) == ("mmlu-med-dev", 4, "openai/m", 4)
    assert run.method_names == ["cot", "rag", "chr"] and run.program_settings == {"budget": 3, "lam": 0.5}
    assert run.config_for("rag").budget == 3 and run.config_for("chr").lam == 0.5
    assert run.config_for("hcqr").budget == 3  # a method outside the run: the shared settings it has
    mine = CHR.Config(budget=7, lam=1.5)
    typed = RunConfig(methods=["rag", ("chr", mine)], budget=3)
    assert typed.config_for("chr") is mine and typed.config_for("rag").budget == 3
    again = typed.replace(program_settings={"budget": 5}, limit=2)
    assert again.config_for("rag").budget == 5 and again.config_for("chr") is mine and again.data.limit == 2
    assert again.data.dataset is None and typed.data.limit is None  # replace copies; nothing mutated


def test_a_program_settings_own_rule_names_where_the_value_came_from():
    """`--budget 0` or `budget = 0` in hyporag.toml is refused naming the flag or the file, not the config class."""
    from hyporag.foundation.errors import ConfigError
    from hyporag.jobs.run_config import build_run_config

    with pytest.raises(ConfigError, match=r"^RunConfig.budget: budget must be a whole number of passages >= 1"):
        RunConfig(budget=0)
    with pytest.raises(ConfigError, match=r"^--budget: budget must be"):
        build_run_config({"budget": 0})
    with pytest.raises(ConfigError, match=r"^--protocol: unknown protocol 'papr'"):
        build_run_config({"protocol": "papr"})
    with pytest.raises(ConfigError, match=r"^hyporag.toml: budget: budget must be"):
        build_run_config({}, {"budget": -1}, "hyporag.toml")
