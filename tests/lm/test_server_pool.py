"""One run over two real llama.cpp HTTP servers on 127.0.0.1 (`--api-base` twice): both serve, one killed mid-run
and the run finishes on the other with no row lost, every endpoint dead exits 3 with rows kept, and the resume
finishes. Marked: runs the model (one thread per server)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import ExitStack

import pytest

from hyporag.lm.gguf import resolve_model_path
from hyporag.testing import ALIAS, SMALL_MODEL, free_port, llama_server
from tests.conftest import write_jsonl

pytestmark = pytest.mark.local_lm

QUESTIONS = [{"id": f"q{i}", "question": f"Which organ makes hormone {name}?", "answer": gold,
              "options": {"A": "Pancreas", "B": "Kidney", "C": "Thyroid", "D": "Adrenal gland"}}
             for i, (name, gold) in enumerate([("insulin", "A"), ("erythropoietin", "B"), ("thyroxine", "C"),
                                               ("cortisol", "D"), ("glucagon", "A"), ("renin", "B"),
                                               ("calcitonin", "C"), ("aldosterone", "D"), ("somatostatin", "A"),
                                               ("calcitriol", "B")])]


def command(tmp_path, ports: list[int], limit: int) -> list[str]:
    bases = [arg for port in ports for arg in ("--api-base", f"http://127.0.0.1:{port}/v1")]
    return [sys.executable, "-m", "hyporag.cli", "eval", "--methods", "cot", "--dataset", str(tmp_path / "q.jsonl"),
            "--limit", str(limit), "--out", str(tmp_path / "run"), "--lm", f"openai/{ALIAS}", *bases,
            "--api-key", "none", "--threads", "2", "--no-cache", "--max-tokens", "64", "--timeout", "120"]


def rows(tmp_path) -> list[dict]:
    path = tmp_path / "run" / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def test_two_servers_one_killed_then_both_dead_then_resumed(tmp_path):
    write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    model, ports = resolve_model_path(SMALL_MODEL), [free_port(), free_port()]
    env = {**os.environ, "HYPORAG_CACHE_DIR": str(tmp_path / "cache")}
    with ExitStack() as servers:
        first, _ = servers.enter_context(llama_server(model, ports[0], threads=1))
        second, _ = servers.enter_context(llama_server(model, ports[1], threads=1))
        run = subprocess.Popen(command(tmp_path, ports, 8), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        deadline = time.time() + 300
        while time.time() < deadline and len(rows(tmp_path)) < 3 and run.poll() is None:
            time.sleep(0.1)
        second.send_signal(signal.SIGKILL)  # mid-run: its next call (or the one in flight) goes to the first
        out, err = run.communicate(timeout=600)
        assert run.returncode == 0, err
        done = rows(tmp_path)
        assert len(done) == 8 and not [r for r in done if r["error"]]  # no row lost
        usage = json.loads((tmp_path / "run" / "run.json").read_text())["endpoints"][f"openai/{ALIAS}"]
        calls = {base.rsplit(":", 1)[1]: u["calls"] for base, u in usage["endpoints"].items()}
        assert all(count > 0 for count in calls.values()) and sum(calls.values()) == 8, usage  # both served
        assert usage["roles"] == ["hypothesis", "answer", "judge"]
        assert f"127.0.0.1:{ports[0]}/v1" in out  # the command's summary line per endpoint
        first.send_signal(signal.SIGKILL)
        dead = subprocess.run(command(tmp_path, ports, 10), env=env, capture_output=True, text=True, timeout=600)
    assert dead.returncode == 3, dead.stderr
    assert "every endpoint" in dead.stderr.strip().splitlines()[-1]
    kept = rows(tmp_path)
    assert len([r for r in kept if not r["error"]]) == 8  # the finished rows stay
    with llama_server(model, ports[0], threads=1):
        resumed = subprocess.run(command(tmp_path, ports, 10), env=env, capture_output=True, text=True,
                                 timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    final = rows(tmp_path)
    assert len({r["question_id"] for r in final if not r["error"]}) == 10
    assert {r["question_id"] for r in final[len(kept):]}.isdisjoint({r["question_id"] for r in done})
    usage = json.loads((tmp_path / "run" / "run.json").read_text())["endpoints"][f"openai/{ALIAS}"]["endpoints"]
    assert sum(u["calls"] for u in usage.values()) == 10  # sessions add up
