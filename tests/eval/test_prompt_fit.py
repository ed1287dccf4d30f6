"""Over-long questions are refused before any LM call, with file and line, or skipped and counted."""

from __future__ import annotations

import json

import pytest

from hyporag.cli import main
from hyporag.eval.prompt_fit import check_prompts_fit
from hyporag.foundation.errors import DataError
from hyporag.lm.context_window import ContextWindow, estimate_tokens
from hyporag.programs import make_program
from hyporag.questions.records import load_records
from tests.conftest import QUESTIONS, dummy_roles, write_jsonl

LONG = {"id": "long", "question": "Which finding is most likely? " + "The patient reports fatigue. " * 400,
        "options": {"A": "x", "B": "y"}, "answer": "A"}


def words(text: str) -> int:
    return len(text.split())


def test_the_worst_case_prompt_counts_the_budgets_longest_passages(tiny_retriever, tmp_path):
    report = load_records(write_jsonl(tmp_path / "q.jsonl", [*QUESTIONS, LONG]))
    roles = dummy_roles([])
    programs = {"cot": make_program("cot", roles=roles),
                "rag": make_program("rag", retriever=tiny_retriever, roles=roles, budget=3)}
    window = ContextWindow("m", 1500, words, True)
    expected = (f"{tmp_path / 'q.jsonl'}:4: rag's answer prompt needs up to 1959 tokens, the model's context is 1500 "
                "\\(question and options 1609, reply 100, the 3 longest passages of the index 43; longest 'p6'")
    with pytest.raises(DataError, match=expected):
        check_prompts_fit(report.examples, report.where, programs, window, reply_tokens=100)
    fit = check_prompts_fit(report.examples, report.where, programs, window, 100, skip_bad_rows=True)
    assert [e.id for e in fit.kept] == ["q1", "q2", "q3"] and len(fit.skipped) == 1
    # the bound is the B longest passages: a larger budget needs more room for the same question
    from hyporag.eval.prompt_fit import PromptFit

    q = report.examples[0]
    needs = [PromptFit(make_program("rag", retriever=tiny_retriever, roles=roles, budget=b), window, 0).needed(
        q.question, q.options)[1] for b in (1, 3)]
    longest = tiny_retriever.store.longest(2)
    assert needs[1] - needs[0] >= sum(words(p.contents) for p in longest)
    unknown = ContextWindow("m", None, estimate_tokens, False)
    assert not check_prompts_fit(report.examples, report.where, programs, unknown, 100).checked


def test_eval_refuses_a_too_long_row_before_any_call(server, tmp_path, capsys):
    dataset = write_jsonl(tmp_path / "q.jsonl", [*QUESTIONS, LONG])
    argv = ["eval", "--dataset", str(dataset), "--methods", "cot", "--lm", "openai/m", "--api-key", "k",
            "--api-base", f"http://127.0.0.1:{server.server_port}/v1", "--no-cache", "--context-tokens", "2000",
            "--out", str(tmp_path / "run")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "context is 2000" in err
    assert f"{dataset}:4: cot's answer prompt needs up to about" in err
    assert server.requests == 0
    assert main([*argv, "--skip-bad-rows"]) == 0
    settings = json.loads((tmp_path / "run" / "run.json").read_text())
    assert settings["skipped_too_long"] == 1 and settings["n"] == 3 and "2000 tokens" in settings["context_check"]


def test_ask_refuses_a_too_long_question(server, capsys):
    code = main(["ask", "--question", LONG["question"], "--option", "A=x", "--option", "B=y", "--method", "cot",
                 "--lm", "openai/m", "--api-key", "k", "--api-base", f"http://127.0.0.1:{server.server_port}/v1",
                 "--context-tokens", "1000"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and server.requests == 0
    assert err.startswith("hyporag: error: --question: cot's answer prompt needs up to about")
