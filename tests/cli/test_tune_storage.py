"""`tune --storage FILE` names a file that exists and is not an Optuna journal (a typo: the dataset, a notes file):
refused in one line before anything is written to it, for a study and for `--report` alike."""

from __future__ import annotations

import pytest

from hyporag.cli import main
from tests.conftest import QUESTIONS, write_jsonl


@pytest.mark.parametrize("content", [b"my notes about the study\n", b"\x89PNG\r\n\x1a\n\x00\x00", b"{\"id\": 1}\n"])
@pytest.mark.parametrize("report", [False, True])
def test_a_storage_file_that_is_not_a_journal_is_refused_untouched(tmp_path, capsys, content, report):
    notes = tmp_path / "notes.txt"
    notes.write_bytes(content)
    dataset = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    argv = ["tune", "--method", "cot", "--study", "s", "--storage", str(notes), "--dataset", str(dataset),
            "--lm", "openai/m", "--api-base", "http://127.0.0.1:9/v1", "--api-key", "k"]
    assert main([*argv, *(["--report"] if report else [])]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not an Optuna journal" in err[0] and str(notes) in err[0]
    assert notes.read_bytes() == content


def test_a_directory_given_as_storage_is_refused(tmp_path, capsys):
    dataset = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    assert main(["tune", "--method", "cot", "--study", "s", "--storage", str(tmp_path), "--dataset", str(dataset),
                 "--lm", "openai/m", "--api-base", "http://127.0.0.1:9/v1", "--api-key", "k"]) == 2
    assert "is a directory" in capsys.readouterr().err
