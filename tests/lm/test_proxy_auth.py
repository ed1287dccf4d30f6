"""An OpenAI-compatible server behind a basic-auth proxy, with an API key of its own: `--api-base
http://user:pw@host/v1 --api-key K` sends both (the proxy's credentials as basic auth, the key as X-Api-Key) on DSPy's
native engine, never through LiteLLM (whose per-call Python cost grew to seconds a call under load)."""

from __future__ import annotations

import dspy
import pytest

import hyporag
from hyporag.jobs.run_config import RunConfig
from hyporag.lm.client import build_lm
from hyporag.testing import fake_openai

QUESTIONS = [{"question": f"Which organ makes hormone {i}?", "options": {"A": "Pancreas", "B": "Kidney"},
              "answer": "A"} for i in range(3)]


@pytest.fixture
def no_litellm(monkeypatch):
    """LiteLLM's completion fails the test if anything reaches it."""
    import litellm

    def refuse(*args, **kwargs):
        raise AssertionError("the call went through LiteLLM")

    monkeypatch.setattr(litellm, "completion", refuse)


def test_a_key_protected_server_behind_a_basic_auth_proxy_gets_both_on_the_native_engine(tmp_path, no_litellm):
    with fake_openai(["m"], letter_logprobs={"A": -0.1, "B": -2.5}) as server:
        report = hyporag.evaluate(RunConfig(methods="cot", out=str(tmp_path / "run"), lm="openai/m",
                                            api_base=server.base("alice:pw"), api_key="K3y", no_cache=True),
                                  examples=QUESTIONS, progress=False)
        calls = [(auth, key) for (path, auth), key in zip(server.requests, server.api_keys, strict=True)
                 if path.endswith("/chat/completions")]
    assert len(calls) == 3 and all(auth.startswith("Basic ") and key == "K3y" for auth, key in calls)
    assert report.accuracy("cot") == 1.0 and report.summary("cot")["with_probabilities"] == 3  # logprobs asked


def test_the_same_server_without_a_proxy_gets_the_same_requests(no_litellm):
    class Ask(dspy.Signature):
        question: str = dspy.InputField()
        answer: str = dspy.OutputField()

    with fake_openai(["m"]) as server:
        for base in (server.base(), server.base("alice:pw")):
            with dspy.context(lm=build_lm("openai/m", api_base=base, api_key="K3y", cache=False),
                              adapter=dspy.JSONAdapter()):
                dspy.Predict(Ask)(question="Q?")
        plain, proxied = server.bodies[-2:]
    assert plain == proxied  # the proxy's credentials change the headers only, never the request
    chats = [auth for path, auth in server.requests if path.endswith("/chat/completions")]
    assert chats[0] == "Bearer K3y" and chats[1].startswith("Basic ")
