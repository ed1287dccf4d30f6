"""What you need to test what you build on hyporag, as DSPy's `dspy.utils.dummies` is for DSPy: a DummyLM in every
role, a tiny corpus, its index and questions, and the contract check every method keeps (`method_check`); a real
llama.cpp HTTP server of an embedded model on 127.0.0.1 (`llama_server`); a small OpenAI-compatible server whose
replies, reported models, logprobs and faults you choose (`fake_openai`); and a recorder/replayer of an engine's
requests (`replay`). hyporag's own tests and benches use these same ones."""

from hyporag.testing.fake_openai import Faults, Served, fake_openai
from hyporag.testing.llama_server import ALIAS, SMALL_MODEL, free_port, llama_server, wait_until_serving
from hyporag.testing.method_check import (
    PASSAGES,
    QUESTIONS,
    check_method,
    dummy_roles,
    tiny_corpus,
    tiny_questions,
    tiny_retriever,
    write_jsonl,
)
from hyporag.testing.replay import RecordingServer, replay, reply_text

__all__ = ["ALIAS", "Faults", "PASSAGES", "QUESTIONS", "SMALL_MODEL", "RecordingServer", "Served", "check_method",
           "dummy_roles", "fake_openai", "free_port", "llama_server", "replay", "reply_text", "tiny_corpus",
           "tiny_questions", "tiny_retriever", "wait_until_serving", "write_jsonl"]
