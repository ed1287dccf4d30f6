"""A method of the user's own, written in a file outside hyporag and registered through the public call, runs
where hyporag's own methods run: evaluate (rows, report, page), tune, and a frozen artifact reloaded."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest

import hyporag
from hyporag.foundation.errors import ConfigError
from hyporag.jobs.run_config import RunConfig
from hyporag.programs.registry import METHODS
from tests.conftest import CONTRAST, PASSAGES, QUESTIONS, dummy_roles, write_jsonl

PLUGIN = '''
from dataclasses import dataclass

from hyporag.programs import MCQProgram
from hyporag.programs.config import ProgramConfig, flag


@dataclass(frozen=True)
class TitleFirstConfig(ProgramConfig):
    title_words: int = flag("--title-words", "title-first: words of the question searched as well", default=3)


class TitleFirst(MCQProgram):
    """Searches the question's first words, then the whole question, and keeps the first list's order."""

    method = "title-first"
    Config = TitleFirstConfig

    def retrieve(self, question, options, meter, trace):
        short = " ".join(question.split()[: self.config.title_words])
        trace.queries += [short, question]
        seen, hits = set(), []
        for hit in self.retriever.search(short, self.budget) + self.retriever.search(question, self.budget):
            if hit.id not in seen:
                seen.add(hit.id)
                hits.append(hit)
        return hits
'''


@pytest.fixture
def plugin(tmp_path):
    path = tmp_path / "my_methods.py"
    path.write_text(PLUGIN)
    spec = importlib.util.spec_from_file_location("my_methods", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["my_methods"] = module
    spec.loader.exec_module(module)
    hyporag.register_method("title-first", module.TitleFirst, {"title_words": 2})
    yield module
    METHODS.pop("title-first", None)
    sys.modules.pop("my_methods", None)


def test_a_method_from_outside_runs_in_eval_tune_and_the_viewer(plugin, tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": i, "title": t, "contents": c} for i, t, c in PASSAGES])
    dataset = write_jsonl(tmp_path / "q.jsonl", QUESTIONS * 1)
    run = RunConfig(dataset=str(dataset), corpus=str(corpus), methods="rag,title-first", out=str(tmp_path / "run"),
                    program_settings={"budget": 2})
    roles = dummy_roles([{"answer": "B"}] * 20)
    report = hyporag.evaluate(run, roles=roles, progress=False)
    assert {s["method"] for s in report.methods} == {"rag", "title-first"}
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    mine = [r for r in rows if r["method"] == "title-first"]
    assert len(mine) == 3 and all(len(r["queries"]) == 2 and 1 <= len(r["passage_ids"]) <= 2 for r in mine)
    settings = json.loads((tmp_path / "run" / "run.json").read_text())["program"]["title-first"]
    assert settings["title_words"] == 2 and settings["budget"] == 2  # its preset, and the run's budget
    assert "title-first" in (tmp_path / "run" / "report.html").read_text()
    tuned = hyporag.tune(hyporag.TuneSettings(method="title-first", trials=2, study="mine",
                                              storage=str(tmp_path / "s.journal"), out=str(tmp_path / "art")),
                         run.replace(dataset=str(dataset)), dummy_roles([{"answer": "B"}] * 40))
    assert tuned.trials == 2
    frozen = hyporag.load_program(tmp_path / "art", roles=dummy_roles([{"answer": "B"}]))
    assert type(frozen).__name__ == "TitleFirst"


def test_registering_is_checked(plugin):
    with pytest.raises(ConfigError, match="registered already"):
        hyporag.register_method("title-first", plugin.TitleFirst)
    with pytest.raises(ConfigError, match="not a subclass"):
        hyporag.register_method("other", dict)
    with pytest.raises(ConfigError, match="title_words: must be a whole number"):
        hyporag.register_method("other", plugin.TitleFirst, {"title_words": "two"})


def test_a_registered_methods_setting_works_by_name_flag_and_project_file(plugin, tmp_path, monkeypatch):
    """The registry is asked, never a list copied at import: after `register_method`, its setting is a setting
    of RunConfig(...), of the command line and of hyporag.toml, checked by its own field."""
    from hyporag.cli import build_parser
    from hyporag.cli.common import load_settings

    run = RunConfig(methods="title-first", title_words=5)
    assert run.config_for("title-first").title_words == 5 and run.program_settings["title_words"] == 5
    with pytest.raises(ConfigError, match=r"^RunConfig.title_words: must be a whole number, got 'x'"):
        RunConfig(methods="title-first", title_words="x")
    args = build_parser().parse_args(["eval", "--methods", "title-first", "--title-words", "4"])
    assert load_settings(args)[0].config_for("title-first").title_words == 4
    (tmp_path / "hyporag.toml").write_text("title_words = 6\n")
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(["eval", "--methods", "title-first"])
    assert load_settings(args)[0].config_for("title-first").title_words == 6
    (tmp_path / "hyporag.toml").write_text("title_words = -1.5\n")
    with pytest.raises(ConfigError, match=r"hyporag.toml: title_words: must be a whole number"):
        load_settings(build_parser().parse_args(["eval", "--methods", "title-first"]))


def test_the_shipped_contract_check_passes_an_outside_method_and_catches_a_broken_one(plugin, tmp_path):
    """hyporag.testing gives a method's author what hyporag's own tests use: the roles, the tiny index, the check."""
    from hyporag.programs import MCQProgram
    from hyporag.testing import check_method, tiny_retriever

    retriever = tiny_retriever(tmp_path)
    row = check_method("title-first", [{"answer": "B"}], retriever)
    assert row["answer"] == "B" and 1 <= len(row["passage_ids"]) <= 2

    class Greedy(MCQProgram):  # ignores the budget its base class would have cut to: the check must notice
        method = "greedy"

        def retrieve(self, question, options, meter, trace):
            return retriever.search(question, 5)

        def forward(self, question, options):
            prediction = super().forward(question, options)
            prediction.passages = [h.to_dict() for h in retriever.search(question, 5)]
            return prediction

    hyporag.register_method("greedy", Greedy)
    try:
        with pytest.raises(AssertionError, match="greedy: 5 passages for a budget of 2"):
            check_method("greedy", [{"answer": "B"}], retriever)
    finally:
        METHODS.pop("greedy", None)


@pytest.mark.parametrize(("settings", "answer_calls"), [({}, 1), ({"answer_mode": "per-passage"}, 3),
                                                        ({"retrieve_below": 0.9}, 2),
                                                        ({"answer_mode": "per-passage", "retrieve_below": 0.9}, 3)])
def test_the_contract_check_passes_the_builtin_methods_under_every_reader_setting(tmp_path, settings, answer_calls):
    """The documented reader settings change how many answer calls a question makes; the check knows them (DummyLM
    gives no option probabilities, so a closed-book-first reader always retrieves)."""
    from hyporag.testing import check_method, tiny_retriever
    from tests.programs.test_programs import HYPOTHESIS, QUERIES

    retriever = tiny_retriever(tmp_path)
    replies = {"[[ ## likely_option ## ]]": HYPOTHESIS, "[[ ## support_query ## ]]": QUERIES,
               "[[ ## target_hypothesis ## ]]": CONTRAST, "[[ ## answer ## ]]": {"answer": "B"}}
    for method in ("rag", "hcqr", "chr"):
        row = check_method(method, replies, retriever, **settings)
        assert row["cost_by_role"]["answer"]["calls"] == answer_calls, method
