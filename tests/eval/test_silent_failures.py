"""A wrong result must never look like a right one: lost DSPy context, all-errored runs, misread scores."""

from __future__ import annotations

import json

import dspy
import pytest
from dspy.utils import DummyLM

from hyporag.cli import main
from hyporag.eval.dspy_metrics import accuracy
from hyporag.foundation.errors import RunFailedError
from hyporag.jobs.evaluate import run_evaluation
from hyporag.optimizers.teleprompter import score
from hyporag.programs import make_program


@pytest.mark.parametrize("threads", [1, 2])
def test_programs_without_roles_see_the_callers_dspy_context(tiny_questions, tmp_path, threads):
    lm = DummyLM([{"answer": a} for a in ["B", "C", "A"]])
    program = make_program("cot")  # no roles: the LM comes from dspy.context, as DSPy users write it
    with dspy.context(lm=lm):
        report = run_evaluation({"cot": program}, tiny_questions, tmp_path / "run", {"dataset": "t"},
                                threads=threads, progress=False)
    summary = report["methods"][0]
    assert summary["errors"] == 0 and summary["n"] == 3 and len(lm.history) == 3
    assert summary["accuracy"] > 0


def test_a_run_whose_rows_all_errored_fails_with_the_first_error(tiny_questions, tmp_path):
    program = make_program("cot")  # and no LM anywhere
    with pytest.raises(RunFailedError, match="every question of cot errored .*No LM is loaded"):
        run_evaluation({"cot": program}, tiny_questions, tmp_path / "run", {"dataset": "t"}, progress=False)
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and all(r["error"] for r in rows)  # kept, and retried by a re-run


def test_cli_exit_status_of_an_all_errored_run_is_not_zero(server, tiny_questions, tmp_path, capsys):
    server.mode = "429"
    code = main(["eval", "--dataset", str(tmp_path / "q.jsonl"), "--methods", "cot", "--lm", "openai/m",
                 "--api-base", f"http://127.0.0.1:{server.server_port}/v1", "--api-key", "k", "--no-cache",
                 "--retries", "0", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 4 and "every question of cot errored" in err[-1]


def test_compile_score_below_one_percent_is_not_misread(tiny_questions):
    examples = [tiny_questions[0]] + [tiny_questions[1]] * 199  # 1 right answer in 200 = 0.5 %
    lm = DummyLM([{"answer": "B"}] * 200)
    program = make_program("cot")
    with dspy.context(lm=lm):
        assert score(program, examples, accuracy) == pytest.approx(1 / 200)
