"""Stored rows answer only the questions they were computed for, survive a damaged line, and a full disk is one
line with its own exit status: the second trust pass's data-loss and stale-result cases, end to end on `eval`."""

from __future__ import annotations

import errno
import json
import os

import pytest

from hyporag.cli import main
from hyporag.eval import results_store
from hyporag.testing import free_port
from tests.conftest import QUESTIONS, write_jsonl


def eval_argv(server, dataset, out, *extra):
    return ["eval", "--dataset", str(dataset), "--methods", "cot", "--lm", "openai/m", "--api-key", "k", "--api-base",
            f"http://127.0.0.1:{server.server_port}/v1", "--no-cache", "--out", str(out), *extra]


def rows(out) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_an_edited_gold_is_answered_again_and_reported_from_the_new_row(server, tmp_path, capsys):
    dataset, out = write_jsonl(tmp_path / "q.jsonl", QUESTIONS), tmp_path / "run"
    assert main(eval_argv(server, dataset, out)) == 0 and server.requests == 3
    assert json.loads((out / "summary.json").read_text())["methods"][0]["accuracy"] == pytest.approx(1 / 3)
    edited = [dict(q) for q in QUESTIONS]
    edited[1]["answer"] = "A"  # the fake server always answers A: q2 turns from wrong to right
    write_jsonl(dataset, edited)
    capsys.readouterr()
    assert main(eval_argv(server, dataset, out)) == 0
    assert server.requests == 4  # only the changed question was asked again
    assert "1 stored row(s) answered a question that has changed since" in capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["methods"][0]["accuracy"] == pytest.approx(2 / 3)  # from the new gold, not the stored row's
    latest = {r["question_id"]: r for r in rows(out)}
    assert latest["q2"]["gold"] == "A" and latest["q2"]["correct"]


def test_replaced_questions_under_the_same_ids_are_all_answered_again(server, tmp_path):
    dataset, out = write_jsonl(tmp_path / "q.jsonl", QUESTIONS), tmp_path / "run"
    assert main(eval_argv(server, dataset, out)) == 0
    write_jsonl(dataset, [{**q, "question": q["question"] + " (revised)"} for q in QUESTIONS])
    assert main(eval_argv(server, dataset, out)) == 0 and server.requests == 6
    summary = json.loads((out / "summary.json").read_text())
    assert summary["methods"][0]["n"] == 3


def test_a_damaged_middle_line_drops_only_itself_and_is_kept_aside(server, tmp_path, capsys):
    dataset, out = write_jsonl(tmp_path / "q.jsonl", QUESTIONS), tmp_path / "run"
    assert main(eval_argv(server, dataset, out)) == 0
    lines = (out / "results.jsonl").read_bytes().splitlines(keepends=True)
    damaged = b'{"question_id": "q2", "method": "cot", "answ\xff\n'
    (out / "results.jsonl").write_bytes(lines[0] + damaged + lines[2])
    capsys.readouterr()
    assert main(eval_argv(server, dataset, out)) == 0
    assert server.requests == 4  # q1 and q3 kept, only q2 paid for again
    assert (out / "results.jsonl.dropped").read_bytes().endswith(damaged)
    err = capsys.readouterr().err
    assert "results.jsonl:2" in err and "results.jsonl.dropped" in err
    assert sorted(r["question_id"] for r in rows(out)) == ["q1", "q2", "q3"]


def test_a_full_disk_is_one_line_exit_5_and_the_lock_is_released(server, tmp_path, monkeypatch, capsys):
    dataset, out = write_jsonl(tmp_path / "q.jsonl", QUESTIONS), tmp_path / "run"
    real_fsync = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(results_store.os, "fsync", full)
    assert main(eval_argv(server, dataset, out)) == 5
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "disk full" in err and str(out) in err
    assert not (out / ".lock.owner").exists()  # released (the flock file itself stays, unlocked)
    monkeypatch.setattr(results_store.os, "fsync", real_fsync)
    assert main(eval_argv(server, dataset, out)) == 0  # and the re-run resumes


def test_out_naming_a_file_and_a_comma_in_a_dataset_path(server, tmp_path, capsys):
    dataset = write_jsonl(tmp_path / "d,my.jsonl", QUESTIONS)
    (tmp_path / "taken").write_text("mine")
    assert main(eval_argv(server, dataset, tmp_path / "taken")) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "taken: is a file, not a results directory" in err
    assert (tmp_path / "taken").read_text() == "mine"
    assert main(eval_argv(server, dataset, tmp_path / "run")) == 0  # an existing path with a comma is one file
    assert main(eval_argv(server, f"{tmp_path}/d,yours.jsonl", tmp_path / "run2")) == 2
    assert "commas separate datasets" in capsys.readouterr().err


@pytest.mark.parametrize("limit", ["0", "-1"])
def test_limit_below_one_is_refused(server, tmp_path, capsys, limit):
    dataset = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    assert main(eval_argv(server, dataset, tmp_path / "run", "--limit", limit)) == 2
    assert "--limit" in capsys.readouterr().err and server.requests == 0


def test_an_unknown_fail_under_method_is_refused_before_any_call(server, tmp_path, capsys):
    dataset = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    assert main(eval_argv(server, dataset, tmp_path / "run", "--fail-under", "chr=0.5")) == 2
    assert "'chr' is not a method of this run" in capsys.readouterr().err and server.requests == 0


@pytest.mark.parametrize(("mode", "code"), [("429", 4), ("down", 3)])
def test_junit_is_rewritten_when_the_run_fails(server, tmp_path, mode, code):
    dataset, junit = write_jsonl(tmp_path / "q.jsonl", QUESTIONS), tmp_path / "junit.xml"
    junit.write_text('<testsuite name="old" tests="1" failures="0"><testcase name="cot"/></testsuite>')
    server.mode = mode
    argv = eval_argv(server, dataset, tmp_path / "run", "--retries", "0", "--junit", str(junit))
    if mode == "down":  # nothing listens there: the backend is unreachable
        argv[argv.index("--api-base") + 1] = f"http://127.0.0.1:{free_port()}/v1"
    assert main(argv) == code
    text = junit.read_text()
    assert 'name="old"' not in text and "<error" in text and f"exit {code}" in text

