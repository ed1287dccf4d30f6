"""Retrieval drawn from the reader's doubt (hypothesis_from="reader"): the options its closed-book answer is torn
between reach the hypothesis prompt, in the options' order and without their probabilities; each gets the same
retrieval; a sure reader retrieves nothing; every answer mode goes through one interface (a new one defined here,
in the test, runs unchanged); the artifact keeps the new settings."""

from __future__ import annotations

import json

import pytest

import hyporag
from hyporag.eval.row import ResultRow
from hyporag.jobs.run_config import RunConfig
from hyporag.programs.hypothesis import torn_between
from hyporag.testing import fake_openai
from tests.conftest import QUESTIONS, write_jsonl

# q1: which cells secrete insulin? A Alpha, B Beta (gold), C Hepatocytes, D Osteoclasts. Closed book, the reader is
# torn between A (0.5) and B (0.4)
CLOSED = {"A": -0.7, "B": -0.92, "C": -4.0, "D": -4.5}
SAYS = {"(no passages)": ({"answer": "A"}, CLOSED),
        "torn": ({"evidence_queries": ["alpha cells glucagon", "beta cells insulin"],
                  "distinction_query": "alpha versus beta islet cells", "clues_query": "insulin secretion islets",
                  "statements": ["Alpha cells secrete insulin.", "Beta cells secrete insulin."]}, None)}
ELSE = {"A": -1.2, "B": -0.4, "C": -3.0, "D": -4.0}


def evaluate(tmp_path, corpus, server, out: str, methods: str = "hcqr", **program) -> list[ResultRow]:
    dataset = write_jsonl(tmp_path / "q.jsonl", QUESTIONS[:1])
    hyporag.evaluate(RunConfig(dataset=str(dataset), methods=methods, out=str(tmp_path / out), corpus=str(corpus),
                               lm="openai/m", api_base=server.base(), api_key="k", no_cache=True, budget=4,
                               **program), progress=False)
    return [ResultRow.of(json.loads(line)) for line in (tmp_path / out / "results.jsonl").read_text().splitlines()]


def test_the_doubt_is_the_fewest_options_holding_most_of_the_probability():
    assert [o for o, _ in torn_between(CLOSED)] == ["A", "B"]
    spread = {"A": -1.1, "B": -1.2, "C": -1.3, "D": -3.0}  # three hold most: at most three are taken
    assert [o for o, _ in torn_between(spread)] == ["A", "B", "C"]
    assert torn_between(None) is None and torn_between({"A": 0.0}) is None


@pytest.mark.parametrize("method", ["hcqr", "chr"])
def test_the_options_the_reader_is_torn_between_reach_the_hypothesis_prompt(tiny_corpus_dir, tmp_path, method):
    with fake_openai(["m"], letter_logprobs=ELSE, by_prompt=SAYS) as server:
        (row,) = evaluate(tmp_path, tiny_corpus_dir, server, method, methods=method, hypothesis_from="reader")
        bodies = list(server.bodies)
    prompts = [json.dumps(b["messages"]) for b in bodies]
    asked = [p for p in prompts if "torn" in p and "(no passages)" not in p]
    assert len(asked) == 1  # one call writes the queries (or statements) for every torn option
    assert "A. Alpha cells\\nB. Beta cells" in asked[0] and "0.5" not in asked[0]  # options' order, no probabilities
    assert row.hypothesis["drawn_from"] == "reader" and row.hypothesis["torn"] == ["A", "B"]
    assert row.hypothesis["probabilities"]["A"] == pytest.approx(0.537, abs=0.01)  # renormalised over A-D
    assert row.hypothesis_option is None and row.closed_book["answer"] == "A"
    assert row.calls == 3 and row.passage_ids  # closed book, the doubt's one call, the joint answer
    if method == "hcqr":
        assert row.queries[:2] == ["alpha cells glucagon", "beta cells insulin"] and len(row.queries) == 4
    else:
        assert row.queries == ["Alpha cells secrete insulin.", "Beta cells secrete insulin."]
    summary = json.loads((tmp_path / method / "summary.json").read_text())["methods"][0]
    assert summary["echo"] == 0.0 and summary["hypothesis_names_gold"] == 1.0  # both options, gold among them


def test_a_sure_reader_retrieves_nothing_and_a_generated_hypothesis_echoes_it(tiny_corpus_dir, tmp_path):
    sure = {**SAYS, "(no passages)": ({"answer": "B"}, {"A": -4.0, "B": -0.05, "C": -5.0, "D": -5.0})}
    with fake_openai(["m"], letter_logprobs=ELSE, by_prompt=sure) as server:
        (row,) = evaluate(tmp_path, tiny_corpus_dir, server, "sure", hypothesis_from="reader", retrieve_below=0.9)
        assert server.completions == 1
    assert row.retrieved is False and not row.passage_ids and not row.queries and row.answer == "B"
    hypothesis = {"likely_option": "A", "discriminating_features": ["x"], "expected_evidence": "y", "rationale": "z"}
    with fake_openai(["m"], letter_logprobs=ELSE, by_prompt={**SAYS, "likely_option": (hypothesis, None)}) as server:
        evaluate(tmp_path, tiny_corpus_dir, server, "generated", methods="cot,hcqr")
    summary = {s["method"]: s for s in json.loads((tmp_path / "generated" / "summary.json").read_text())["methods"]}
    assert summary["hcqr"]["echo"] == 1.0 and summary["hcqr"]["hypothesis_names_gold"] == 0.0  # cot answered A


def test_a_new_answer_mode_defined_here_runs_through_the_same_interface(tiny_corpus_dir, tmp_path):
    """A mode that reads only the first passage: registered in one place, it runs in an evaluation, its calls are
    counted and its row field (`retrieved`) reaches the row, with no change to the program or the engine."""
    from hyporag.programs import answer_modes
    from hyporag.programs.answer_modes import AnswerMode, Joint

    class FirstOnly(AnswerMode):
        name = "first-only"

        def calls(self, budget):
            return 1.0

        def read(self, step, question, options, passages, closed_book, preface, trace):
            result, _ = Joint(self.config).read(step, question, options, passages[:1], closed_book, preface, trace)
            return result, {"retrieved": True}

    answer_modes.ANSWER_MODES["first-only"] = FirstOnly
    try:
        with fake_openai(["m"], letter_logprobs=ELSE, by_prompt=SAYS) as server:
            (row,) = evaluate(tmp_path, tiny_corpus_dir, server, "first", methods="rag", answer_mode="first-only")
            context = json.dumps(server.bodies[-1]["messages"])
    finally:
        answer_modes.ANSWER_MODES.pop("first-only")
    assert row.retrieved is True and row.calls == 1 and "[1]" in context and "[2]" not in context


def test_the_artifact_keeps_hypothesis_from_and_the_threshold(tiny_corpus_dir, tmp_path):
    from hyporag.jobs.builders import build_retriever
    from hyporag.optimizers.artifact import load_artifact, save_artifact
    from hyporag.programs import make_program
    from tests.conftest import dummy_roles

    retriever = build_retriever(RunConfig(corpus=str(tiny_corpus_dir)), True)
    roles = dummy_roles([{"answer": "A"}])
    for method in ("hcqr", "chr"):
        program = make_program(method, retriever=retriever, roles=roles, hypothesis_from="reader",
                               answer_mode="per-passage", retrieve_below=0.6)
        save_artifact(tmp_path / method, program, retriever, roles.specs(), {})
        loaded = load_artifact(tmp_path / method, retriever, roles)
        assert loaded.config == program.config and loaded.config.hypothesis_from == "reader"
        assert loaded.config.retrieve_below == 0.6 and loaded.calls_per_question == program.calls_per_question
