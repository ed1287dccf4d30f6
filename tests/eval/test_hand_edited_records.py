"""A run directory edited by hand or damaged is read as it is or refused in one line, never misread: every run.json
field a reader trusts is checked (a `methods` string is not three methods), a stored pull is derived again from the
readings it came from (a forged or unknown direction never reaches a table), and a row without a gold letter is
left out and counted instead of scored wrong."""

from __future__ import annotations

import json

import pytest

from hyporag.cli import main
from hyporag.eval.run_report import report_from_dir
from hyporag.testing import fake_openai
from tests.programs.test_per_passage import ELSE, SAYS, evaluate


@pytest.fixture
def run_dir(tiny_corpus_dir, tmp_path):
    with fake_openai(["m"], letter_logprobs=ELSE, by_prompt=SAYS) as server:
        evaluate(tmp_path, tiny_corpus_dir, server, "pp", answer_mode="per-passage")
    return tmp_path / "pp"


def edit_rows(run, change) -> None:
    path = run / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(change(r)) + "\n" for r in rows))


@pytest.mark.parametrize(("field", "value", "said"), [
    ("seed", [0], "field 'seed' is [0], not a whole number"),
    ("n", float("nan"), "field 'n' is nan, not a finite number"),
    ("n", -3, "field 'n' is -3: a negative count"),
    ("methods", "cot", "field 'methods' is 'cot', not a list of strings"),
    ("question_fingerprints", ["q1"], "field 'question_fingerprints' is ['q1'], not an object of strings"),
    ("program", {"rag": "x"}, "field 'program' is {'rag': 'x'}, not an object of objects"),
    ("baseline", 5, "field 'baseline' is 5"),
    ("sequential", {"alpha": 2}, "field 'sequential.alpha' is 2: not between 0 and 1"),
])
def test_a_wrong_typed_run_record_field_is_one_line_naming_it(run_dir, field, value, said, capsys):
    path = run_dir / "run.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), field: value}))
    for command in (["report", str(run_dir)], ["view", str(run_dir), "--out", str(run_dir / "v.html")]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and said in err and str(path) in err, err


def test_forged_and_unknown_pulls_are_derived_again_from_the_readings(run_dir, capsys):
    def pulls(report: dict) -> tuple:
        (rag,) = report["methods"]
        return rag["pulled_passages"], rag["pull_gold"], rag["pull_distractor"]

    honest = pulls(report_from_dir(run_dir))
    edit_rows(run_dir, lambda r: {**r, "passage_pulls": [
        {"toward": r["gold"], "by": 9.0, "gold_shift": 9.0, "direction": "gold"}, None,
        {"toward": "A", "by": 1.0, "gold_shift": 0.0, "direction": "sideways"}]})
    capsys.readouterr()
    forged = pulls(report_from_dir(run_dir))
    assert forged == honest and forged[1] < 1.0  # as the readings say, not the 100% toward gold stored
    assert "1 row(s) stored passage pulls that disagree with their own readings" in capsys.readouterr().err
    assert main(["view", str(run_dir), "--out", str(run_dir / "v.html")]) == 0


def test_a_row_without_gold_is_left_out_and_counted_not_scored_wrong(run_dir, capsys):
    edit_rows(run_dir, lambda r: {k: v for k, v in r.items() if k != "gold"})
    capsys.readouterr()
    report = report_from_dir(run_dir)
    err = capsys.readouterr().err
    assert "1 damaged row(s) left out" in err
    assert report["coverage"]["questions_complete"] == 0  # no method's accuracy of 0.000 drawn from it
