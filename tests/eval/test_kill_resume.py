"""kill -9 in the middle of `hyporag eval`, then the same command again: finished rows are never recomputed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import dspy
import pytest

from hyporag.jobs.evaluate import run_evaluation
from hyporag.lm.client import LMRoles, build_lm
from hyporag.programs import make_program
from tests.conftest import write_jsonl


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGINT])
def test_interrupt_then_rerun_completes_without_recomputing(server, tmp_path, signum):
    server.mode = "delay"
    questions = [{"id": f"q{i}", "question": f"Question {i}?", "options": {"A": "x", "B": "y"}, "answer": "A"}
                 for i in range(10)]
    dataset = write_jsonl(tmp_path / "q.jsonl", questions)
    out = tmp_path / "run"
    command = [sys.executable, "-m", "hyporag.cli", "eval", "--dataset", str(dataset), "--methods", "cot",
               "--out", str(out), "--lm", "openai/test-model", "--api-base",
               f"http://127.0.0.1:{server.server_port}/v1", "--api-key", "k", "--no-cache"]
    env = {**os.environ, "HYPORAG_CACHE_DIR": str(tmp_path / "cache")}
    # A shell starting this suite in the background leaves SIGINT ignored, and children inherit that: give the
    # run back the default, as it has at a terminal.
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    rows_file = out / "results.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline and (not rows_file.exists() or len(rows_file.read_text().splitlines()) < 3):
        time.sleep(0.05)
    os.kill(proc.pid, signum)
    code = proc.wait(timeout=60)
    assert code == (130 if signum == signal.SIGINT else -signal.SIGKILL)  # Ctrl-C exits cleanly with 130
    finished = len([line for line in rows_file.read_text().splitlines() if line.strip()])
    assert 3 <= finished < 10
    before = server.requests
    assert subprocess.run(command, env=env, capture_output=True).returncode == 0
    # Only the unfinished questions are asked again, one request each (an --api-base server gets the JSON adapter).
    assert server.requests - before == 10 - finished
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    assert sorted(r["question_id"] for r in rows) == sorted(q["id"] for q in questions)


def test_rerun_into_a_new_directory_is_served_from_cache(server, tiny_questions, tmp_path):
    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=False, disk_cache_dir=str(tmp_path / "dspy"))
    lm = build_lm("openai/test-model", api_base=f"http://127.0.0.1:{server.server_port}/v1", api_key="k")
    program = make_program("cot", roles=LMRoles.from_lms(lm))
    first = run_evaluation({"cot": program}, tiny_questions, tmp_path / "a", {"dataset": "t"}, progress=False)
    asked = server.requests
    second = run_evaluation({"cot": program}, tiny_questions, tmp_path / "b", {"dataset": "t"}, progress=False)
    assert first["methods"][0]["calls_per_q"] > 0 and asked > 0
    assert server.requests == asked  # nothing reached the server
    # the questions cost what they cost: every call counted, and marked as served from the cache
    assert second["methods"][0]["calls_per_q"] == first["methods"][0]["calls_per_q"]
    assert second["methods"][0]["cache_hits"] == len(tiny_questions) and first["methods"][0]["cache_hits"] == 0
    assert second["methods"][0]["accuracy"] == first["methods"][0]["accuracy"]
