"""Dataset files: every malformed case fails with file and line, or is skipped and counted on request."""

from __future__ import annotations

import pytest

from hyporag.foundation.errors import DataError
from hyporag.questions.records import load_records
from tests.conftest import QUESTIONS, write_jsonl


def test_valid_jsonl_loads_examples_with_inputs(tmp_path):
    report = load_records(write_jsonl(tmp_path / "q.jsonl", QUESTIONS))
    assert [e.id for e in report.examples] == ["q1", "q2", "q3"]
    first = report.examples[0]
    assert first.options["B"] == "Beta cells" and first.answer == "B"
    assert set(first.inputs().keys()) == {"question", "options"}


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"id": "x", "question": "Q?", "answer": "A"}, "field 'options' is missing"),
        ({"id": "x", "question": "Q?", "options": {"A": "one"}, "answer": "A"}, "at least two"),
        ({"id": "x", "question": "Q?", "options": {"A": "a", "B": "b"}, "answer": "E"}, "not one of the options"),
        ({"id": "x", "options": {"A": "a", "B": "b"}, "answer": "A"}, "field 'question'"),
    ],
)
def test_bad_record_names_file_line_and_field(tmp_path, record, message):
    path = write_jsonl(tmp_path / "bad.jsonl", [QUESTIONS[0], record])
    with pytest.raises(DataError) as err:
        load_records(path)
    assert f"{path}:2:" in str(err.value) and message in str(err.value)


def test_not_json_on_line_n(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "a", "question": "Q", "options": ["x", "y"], "answer": "A"}\n{not json\n')
    with pytest.raises(DataError, match=r"q\.jsonl:2: not JSON"):
        load_records(path)


def test_duplicate_ids_are_refused(tmp_path):
    path = write_jsonl(tmp_path / "q.jsonl", [QUESTIONS[0], QUESTIONS[0]])
    with pytest.raises(DataError, match="duplicate id 'q1' \\(first on line 1\\)"):
        load_records(path)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(DataError, match="not found"):
        load_records(tmp_path / "absent.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(DataError, match="no usable questions"):
        load_records(tmp_path / "empty.jsonl")


def test_skip_bad_rows_skips_and_counts(tmp_path):
    path = write_jsonl(tmp_path / "q.jsonl", [QUESTIONS[0], {"question": "no options"}, QUESTIONS[1]])
    report = load_records(path, skip_bad_rows=True)
    assert [e.id for e in report.examples] == ["q1", "q2"]
    assert len(report.skipped) == 1 and ":2:" in report.skipped[0]


def test_csv_with_letter_columns_loads(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("id,question,A,B,C,answer\nc1,Which?,x,y,,B\n", encoding="utf-8")
    (example,) = load_records(path).examples
    assert example.options == {"A": "x", "B": "y"} and example.answer == "B"


def test_csv_missing_columns_is_one_clear_error(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("question,A,answer\nWhich?,x,A\n", encoding="utf-8")
    with pytest.raises(DataError, match="missing column\\(s\\) B"):
        load_records(path)


def test_list_options_become_letters(tmp_path):
    path = write_jsonl(tmp_path / "q.jsonl", [{"question": "Q?", "options": ["a", "b", "c"], "answer": "c"}])
    (example,) = load_records(path).examples
    assert example.options == {"A": "a", "B": "b", "C": "c"} and example.answer == "C" and example.id == "q-1"
