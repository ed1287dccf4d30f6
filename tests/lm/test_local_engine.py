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


class SlowStreamingServer:
    """Streams one token per 50 ms, as xllamacpp does: each chunk to the callback, which returns True to stop."""

    def __init__(self, tokens: int = 200):
        self.tokens, self.sent = tokens, 0

    def handle_chat_completions(self, body, callback):
        import time

        assert body["stream"] and body["stream_options"] == {"include_usage": True}
        for i in range(self.tokens):
            time.sleep(0.05)
            self.sent += 1
            chunk = {"id": "c", "choices": [{"index": 0, "finish_reason": None, "delta": {"content": f"t{i} "},
                                             "logprobs": {"content": [{"token": f"t{i} ", "logprob": -0.1}]}}]}
            if callback(chunk):
                return
        callback({"id": "c", "choices": [{"index": 0, "finish_reason": "length", "delta": {}}]})
        callback({"id": "c", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": self.tokens},
                  "timings": {"prompt_n": 3}})


def test_a_streamed_reply_is_put_back_together_as_the_plain_one():
    from hyporag.lm.local_engine import answer_interruptibly

    reply = answer_interruptibly(SlowStreamingServer(3), {"messages": []})
    assert reply["choices"][0]["message"]["content"] == "t0 t1 t2 " and reply["choices"][0]["finish_reason"] == "length"
    assert [t["token"] for t in reply["choices"][0]["logprobs"]["content"]] == ["t0 ", "t1 ", "t2 "]
    assert reply["usage"]["completion_tokens"] == 3 and reply["timings"] == {"prompt_n": 3}


def test_ctrl_c_during_an_embedded_call_is_answered_at_once_and_stops_the_model(capsys, sigint_raises):
    """Ctrl-C while the model writes: the call stops waiting within a step, says so, and the model stops at its next
    token (before, the interrupt waited for the whole reply: over 40 s on a busy machine)."""
    import _thread
    import threading
    import time

    from hyporag.lm.local_engine import answer_interruptibly

    server = SlowStreamingServer(200)  # 10 s of reply
    threading.Timer(0.5, _thread.interrupt_main).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        answer_interruptibly(server, {"messages": []})
    assert time.monotonic() - started < 2.0 and server.sent < 40
    assert "stopping: the embedded model ends its current step first" in capsys.readouterr().err


@pytest.mark.local_lm  # builds the embedded 0.5B model
def test_the_embedded_models_streamed_reply_is_its_plain_reply():
    from hyporag.lm.gguf import resolve_model_path
    from hyporag.lm.local_engine import answer_interruptibly, new_server
    from hyporag.testing import SMALL_MODEL

    server = new_server(resolve_model_path(SMALL_MODEL), 2048, 2)
    body = {"messages": [{"role": "user", "content": "Which is a fruit? A. apple B. brick. Answer in JSON."}],
            "max_tokens": 24, "temperature": 0, "logprobs": True, "top_logprobs": 5,
            "json_schema": {"type": "object", "properties": {"answer": {"type": "string", "enum": ["A", "B"]}},
                            "required": ["answer"]}}
    plain = server.handle_chat_completions(dict(body))
    streamed = answer_interruptibly(server, dict(body))
    assert streamed["choices"][0]["message"] == plain["choices"][0]["message"]
    # the answer letter's token and its alternatives (what the option probabilities are read from) are the same;
    # a stream reports only tokens that wrote text (not a markdown fence the server strips, not end-of-generation)
    def letter(reply):
        return [t for t in reply["choices"][0]["logprobs"]["content"] if t["token"] in ("A", "B")]

    assert letter(streamed) == letter(plain) and len(letter(plain)) == 1
    assert streamed["usage"]["completion_tokens"] == plain["usage"]["completion_tokens"]
