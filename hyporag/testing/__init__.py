"""Servers for testing what you build on hyporag, as DSPy's `dspy.utils.dummies` is for DSPy: a real llama.cpp
HTTP server of an embedded model on 127.0.0.1 (`llama_server`), and a small OpenAI-compatible server whose replies,
reported models and logprobs you choose (`fake_openai`), and a recorder/replayer of an engine's requests
(`replay`). hyporag's own tests and benches use these same ones."""

from hyporag.testing.fake_openai import Served, fake_openai
from hyporag.testing.llama_server import ALIAS, SMALL_MODEL, free_port, llama_server, wait_until_serving
from hyporag.testing.replay import RecordingServer, replay, reply_text

__all__ = ["ALIAS", "SMALL_MODEL", "RecordingServer", "Served", "fake_openai", "free_port", "llama_server", "replay",
           "reply_text", "wait_until_serving"]
