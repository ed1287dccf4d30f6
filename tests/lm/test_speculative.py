"""Speculative decoding gives plain decoding's replies at temperature 0, byte for byte: the embedded 1.5B answers
cot, rag, hcqr and chr on one question under both protocols, every request is recorded, and the same requests go
to fresh engines decoding with n-gram lookup, n-gram-mod and the 0.5B draft model. Marked: runs real models."""

from __future__ import annotations

import copy
import os

import pytest

from hyporag.errors import ConfigError
from hyporag.lm.speculative import Speculative

MODES = ("ngram", "ngram-mod", "draft")


def test_parse_names_the_modes_and_refuses_others_in_one_line():
    assert Speculative.parse(None).label == "none"
    assert Speculative.parse("draft").label == "draft:qwen2.5-coder-0.5b"
    assert Speculative.parse("draft:smollm2-135m").draft == "smollm2-135m"
    for bad in ("eagle", "ngram:x"):
        with pytest.raises(ConfigError) as caught:
            Speculative.parse(bad)
        assert "\n" not in str(caught.value) and "--speculative" in str(caught.value)


class Recorder:
    """Stands in for the engine's llama.cpp server: forwards each request and keeps it with its reply."""

    def __init__(self, server):
        self.server, self.calls = server, []

    def handle_chat_completions(self, body):
        result = self.server.handle_chat_completions(body)
        self.calls.append((copy.deepcopy(body), result["choices"][0]["message"]["content"]))
        return result


@pytest.mark.local_lm
@pytest.mark.skipif(not os.environ.get("HYPORAG_SPECULATIVE_TEST"), reason="replays every call on three more "
                    "engines (the draft mode loads a second model): over 15 minutes on 2 cores, beyond CI's budget; "
                    "HYPORAG_SPECULATIVE_TEST=1 runs it")
def test_speculative_replies_equal_plain_decoding(tiny_retriever):
    from hyporag.lm.client import LMRoles, engine_of
    from hyporag.lm.local_engine import _server_for
    from hyporag.programs import make_program
    from hyporag.programs.protocol import FAST, PAPER
    from tests.conftest import QUESTIONS

    calls = []
    for protocol in (FAST, PAPER):
        roles = LMRoles.from_specs(local_adapter=protocol.local_adapter, cap_outputs=protocol.caps_engine_output,
                                   max_tokens=160, cache=False)
        engine = engine_of(roles.answer.lm)
        engine.host_cache_mib = 0  # a server of this test's own, whatever earlier tests left in the process
        recorder = Recorder(engine.server)
        engine._server = recorder
        for method in ("cot", "rag", "hcqr", "chr"):
            program = make_program(method, retriever=tiny_retriever, roles=roles, budget=2, protocol=protocol.name)
            question = QUESTIONS[0]
            program(question=question["question"], options=question["options"])
        engine._server = recorder.server
        calls.extend(recorder.calls)
    assert len(calls) >= 12
    for mode in MODES:
        server = _server_for(engine.model_path, engine.n_ctx, engine.threads, 0, 0, mode)
        differing = [i for i, (body, reply) in enumerate(calls)
                     if server.handle_chat_completions(body)["choices"][0]["message"]["content"] != reply]
        assert not differing, f"--speculative {mode}: replies {differing} of {len(calls)} differ from plain decoding"


def test_the_mode_is_recorded_but_keys_no_cache_and_refuses_no_resume():
    from hyporag.eval.results_store import _other_model
    from hyporag.lm.client import build_lm, engine_of, identity_of

    plain, fast = build_lm("local:qwen2.5-coder-1.5b"), build_lm("local:qwen2.5-coder-1.5b", speculative="ngram")
    assert plain.model == fast.model  # the same DSPy cache key: the replies are plain decoding's
    assert engine_of(fast).speculative == "ngram" and engine_of(plain).speculative == "none"
    assert identity_of(fast)["speculative"] == "ngram" and "speculative" not in identity_of(plain)
    assert not _other_model(identity_of(plain), identity_of(fast))
    with pytest.raises(ConfigError, match="--speculative"):
        build_lm("local:qwen2.5-coder-1.5b", speculative="eagle")
