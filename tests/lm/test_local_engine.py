"""The local engine's request translation: lm15's schema form becomes llama.cpp's json_schema, capped."""

from __future__ import annotations

import pytest
from dspy.lm15 import Config, Message, Request

from hyporag.lm.local_engine import LocalEngine, cap_schema
from hyporag.programs.protocol import PAPER


def test_cap_schema_bounds_free_strings_and_lists_only():
    schema = {"type": "object", "properties": {
        "answer": {"type": "string", "enum": ["A", "B"]},
        "rationale": {"type": "string"},
        "features": {"type": "array", "items": {"type": "string"}},
        "short": {"type": "string", "maxLength": 10}}}
    capped = cap_schema(schema, 100, 3)["properties"]
    assert "maxLength" not in capped["answer"]
    assert capped["rationale"]["maxLength"] == 100 and capped["short"]["maxLength"] == 10
    assert capped["features"]["maxItems"] == 3 and capped["features"]["items"]["maxLength"] == 100


def test_request_becomes_an_openai_body_with_a_capped_schema(tmp_path):
    engine = LocalEngine(tmp_path / "unused.gguf", max_string_chars=50, max_list_items=2)
    schema = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
    request = Request(model="local/m", system="be brief", messages=(Message.user("hi"),),
                      config=Config(max_tokens=20, temperature=0.0, stop=("END",),
                                    response_format={"type": "json_schema", "schema": schema, "name": "o"}))
    body = engine.to_openai_body(request)
    assert body["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert body["max_tokens"] == 20 and body["stop"] == ["END"] and body["temperature"] == 0.0
    assert body["json_schema"]["properties"]["x"]["maxLength"] == 50 and "response_format" not in body


@pytest.mark.local_lm  # builds the embedded 1.5B model
def test_the_paper_protocol_runs_the_embedded_model_uncapped_under_its_own_cache_key(tmp_path):
    """A served model gets DSPy's schema as is; under --protocol paper the in-process engine does too (the cap cut
    HCQR's elimination reasoning at 320 characters, which is where served and in-process answers parted)."""
    from hyporag.jobs.builders import lm_build_kwargs
    from hyporag.jobs.run_config import RunConfig
    from hyporag.lm.client import build_lm

    assert lm_build_kwargs(RunConfig(program_settings={"protocol": PAPER.name}))["cap_outputs"] is False
    assert lm_build_kwargs(RunConfig())["cap_outputs"] is True
    engine = LocalEngine(tmp_path / "unused.gguf", max_string_chars=None)
    schema = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
    request = Request(model="local/m", messages=(Message.user("hi"),),
                      config=Config(response_format={"type": "json_schema", "schema": schema, "name": "o"}))
    assert engine.to_openai_body(request)["json_schema"] == schema
    capped, uncapped = build_lm("local:qwen2.5-coder-1.5b"), build_lm("local:qwen2.5-coder-1.5b", cap_outputs=False)
    assert capped.model != uncapped.model  # DSPy's cache key: a capped reply never answers an uncapped call


def test_thread_count_can_be_set_per_job_without_changing_engine_state(tmp_path, monkeypatch):
    import hyporag.lm.local_engine as local_engine

    started = []
    monkeypatch.setattr(local_engine, "_server_for",
                        lambda path, n_ctx, threads, *rest: started.append(threads) or object())
    monkeypatch.setenv("HYPORAG_LLAMA_THREADS", "1")
    engine = LocalEngine(tmp_path / "unused.gguf", threads=2)
    assert engine.server is not None and started == [1]
    assert engine.dump_state()["threads"] == 2  # state (and so DSPy's cache keys) unchanged


def test_copies_share_the_loaded_model(tmp_path):
    import copy

    engine = LocalEngine(tmp_path / "unused.gguf")
    engine._server = object()  # stands in for a loaded model, which cannot be copied
    assert copy.deepcopy({"engine": engine})["engine"] is engine


def test_an_engine_with_two_slots_gets_a_server_of_its_own(tmp_path, monkeypatch):
    """Slots change how requests are batched (and so, measured, some replies): never the one-slot server reused."""
    import hyporag.lm.local_engine as local_engine

    made = []
    monkeypatch.setattr(local_engine, "_SERVERS", {})
    monkeypatch.setattr(local_engine, "new_server", lambda *args: made.append(args[-1]) or object())
    one, two, again = (LocalEngine(tmp_path / "unused.gguf", slots=n) for n in (1, 2, 1))
    assert one.server is again.server and two.server is not one.server
    assert made == [1, 2]
