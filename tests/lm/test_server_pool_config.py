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
