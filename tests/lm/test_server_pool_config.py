"""Several endpoints of one model: how they are given (flags, project file, per role), that one endpoint is the
plain LM of before, and the pool's error paths against a fake server (real servers: tests/test_server_pool.py)."""

from __future__ import annotations

import dspy
import pytest
from dspy.utils.exceptions import LMTransportError

from hyporag.cli import build_parser, run_config
from hyporag.jobs.run_config import build_run_config
from hyporag.lm.client import LMRoles, build_lm, endpoint_usage, engine_of
from hyporag.lm.router import RoutedEngine

DEAD = "http://127.0.0.1:9/v1"


def test_endpoints_from_flags_the_project_file_and_per_role(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(["eval", "--api-base", "http://a/v1", "--api-base", "http://b/v1",
                                      "--judge-api-base", "http://j/v1"])
    config = run_config(args)
    assert config.lms.endpoints() == ["http://a/v1", "http://b/v1"] == config.lms.endpoints("answer")
    assert config.lms.endpoints("judge") == ["http://j/v1"]
    (tmp_path / "hyporag.toml").write_text('api_bases = ["http://c/v1", "http://d/v1"]\n')
    assert run_config(build_parser().parse_args(["eval"])).lms.endpoints() == ["http://c/v1", "http://d/v1"]
    assert build_run_config({}, {"api_base": "http://e/v1"}).lms.endpoints() == ["http://e/v1"]  # as before
    assert build_run_config({}).lms.endpoints() == []


def test_one_endpoint_is_the_plain_lm_and_several_are_one_routed_lm(server):
    base = f"http://127.0.0.1:{server.server_port}/v1"
    single = build_lm("openai/m", [base], api_key="none")
    assert single.kwargs["api_base"] == base and engine_of(single) in (None, "auto") and endpoint_usage(single) is None
    pool = build_lm("openai/m", [base, DEAD], api_key="none", timeout=5, cache=False)
    assert isinstance(engine_of(pool), RoutedEngine) and pool._hyporag_identity["kind"] == "server-pool"
    roles = LMRoles.from_specs("openai/m", role_api_bases={"judge": [base]}, api_base=[base, DEAD], api_key="none",
                               timeout=5)
    assert roles.answer.lm is roles.hypothesis.lm and roles.judge.lm is not roles.answer.lm
    assert type(roles.answer.adapter) is dspy.JSONAdapter  # a served model's adapter, as with one --api-base
    assert list(roles.endpoint_usage()["openai/m"]["roles"]) == ["hypothesis", "answer"]


def test_a_pool_steps_over_a_dead_endpoint_and_counts_per_endpoint(server):
    base = f"http://127.0.0.1:{server.server_port}/v1"
    lm = build_lm("openai/m", [DEAD, base], api_key="none", timeout=5, cache=False)
    for i in range(4):
        assert lm(f"question {i}") == ['{"answer": "A"}']
    usage = endpoint_usage(lm)
    assert usage[base]["calls"] == 4 == server.requests and usage[DEAD]["calls"] == 0
    assert usage[base]["input_tokens"] == 20 and usage[base]["output_tokens"] == 12


def test_a_pool_whose_every_endpoint_is_dead_is_a_transport_error():
    lm = build_lm("openai/m", [DEAD, "http://127.0.0.1:8/v1"], api_key="none", timeout=5, cache=False)
    with pytest.raises(LMTransportError, match="every endpoint of openai/m failed"):
        lm("question")


def questions(n: int) -> list[dict]:
    return [{"id": f"q{i}", "question": f"Which organ makes hormone number {i}?", "answer": "ABCD"[i % 4],
             "options": {"A": "Pancreas", "B": "Kidney", "C": "Thyroid", "D": "Adrenal"}} for i in range(n)]


def reply_of(prompt: str) -> tuple[dict, dict]:
    """Each question its own answer and belief, from its number: a run's rows say which server state answered."""
    import re

    number = int(re.search(r"hormone number (\d+)", prompt).group(1))
    letter = "ABCD"[(number * 7) % 4]
    return {"answer": letter}, {o: (-0.1 if o == letter else -3.0 - "ABCD".index(o) / 10) for o in "ABCD"}


def served_rows(out) -> dict[str, tuple]:
    import json

    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {r["question_id"]: (r["answer"], r["correct"], r["option_logprobs"], r["error"]) for r in rows}


def test_a_pool_of_two_faulty_servers_one_killed_mid_run_gives_a_clean_runs_rows(tmp_path):
    """Each server fails 5% of requests with a 500, hangs 2% past the timeout and cuts 2% of bodies short; one is
    killed mid-run. Transient faults are retried across the pool and only an endpoint that keeps failing rests, so
    the run finishes with the rows a clean server gives (a Router with allowed_fails=0 stopped within seconds)."""
    import hyporag
    from hyporag.jobs.run_config import RunConfig
    from hyporag.testing import fake_openai
    from hyporag.testing.fake_openai import Faults

    examples = questions(300)

    def evaluate(bases: list[str], out):
        return hyporag.evaluate(RunConfig(methods="cot", out=str(out), lm="openai/m", api_bases=bases, api_key="k",
                                          no_cache=True, threads=8, timeout=1.0), examples=examples, progress=False)

    with fake_openai(["m"]) as clean:
        clean.reply_of = reply_of
        evaluate([clean.base()], tmp_path / "clean")
    with fake_openai(["m"]) as first, fake_openai(["m"]) as second:
        for seed, server in enumerate((first, second)):
            server.reply_of, server.faults = reply_of, Faults(error=0.05, hang=0.02, cut=0.02, hang_seconds=1.5,
                                                              seed=seed)
        import threading
        import time

        def kill_mid_run() -> None:
            while first.completions < 60:
                time.sleep(0.01)
            first.kill()

        killer = threading.Thread(target=kill_mid_run, daemon=True)
        killer.start()
        report = evaluate([first.base(), second.base()], tmp_path / "pool")
        killer.join(5)
    assert served_rows(tmp_path / "pool") == served_rows(tmp_path / "clean")
    assert report.summary("cot").errors == 0
    usage = report.endpoints["openai/m"]["endpoints"]
    assert sum(u["calls"] for u in usage.values()) == len(examples)
    assert all(u["failures"] > 0 for u in usage.values()) and usage[first.base()]["calls"] >= 50
