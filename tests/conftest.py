"""Shared fixtures: fresh DSPy settings and no disk cache per test, a private cache dir, tiny corpora."""

from __future__ import annotations

import json
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import dspy
import pytest
from hypothesis import settings

from hyporag.foundation.paths import data_root
from hyporag.lm.model_identity import reset_identity_cache
from hyporag.testing import PASSAGES, QUESTIONS, dummy_roles, tiny_corpus, write_jsonl  # noqa: F401 (shared)

SHARED = data_root()

# Property tests check behaviour, not speed: on a shared 2-core CI machine one example can take 0.3 s under load
# (it failed Hypothesis's 200 ms default once while an evaluation held both cores), so no per-example deadline.
settings.register_profile("shared-ci", deadline=None)
settings.load_profile("shared-ci")


def sigint_default() -> None:
    """`preexec_fn` for a child a test stops with SIGINT: its Ctrl-C handling as in a terminal, whatever the suite was
    launched from (a non-interactive shell's background job, nohup and some CI launchers leave SIGINT ignored, and
    an ignored signal stays ignored across exec)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def sigint_raises():
    """Ctrl-C in this process raises KeyboardInterrupt, as in a terminal: a suite launched with SIGINT ignored has no
    Python handler, and `_thread.interrupt_main` then does nothing."""
    yield from sigint_handled_by(signal.default_int_handler)


@pytest.fixture
def sigint_ignored():
    """The suite launched as a background job of a non-interactive shell: SIGINT ignored in this process."""
    yield from sigint_handled_by(signal.SIG_IGN)


def sigint_handled_by(handler):
    """SIGINT handled by `handler` for one test, the launcher's handler restored after it."""
    before = signal.signal(signal.SIGINT, handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory) -> Path:
    """One assembled model and tokenizer for the whole session (assembling 1.1 GB per test would dominate)."""
    return tmp_path_factory.mktemp("models")


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch, model_cache):
    """Each test gets its own cache dir and DSPy settings, with the LM cache off so DummyLM answers are fresh."""
    monkeypatch.setenv("HYPORAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HYPORAG_MODEL_CACHE_DIR", str(model_cache))
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    reset_identity_cache()  # hyporag's own cache follows DSPy's until a test's job configures it
    with dspy.context(lm=None, adapter=None, track_usage=False):
        yield



# CHR's one hypothesis call, as every test's DummyLM answers it
CONTRAST = {"target_hypothesis": "Beta cells secrete insulin.", "mimic_hypothesis": "Alpha cells secrete glucagon."}


def chr_replies(answer: str = "A") -> dict:
    """DummyLM replies keyed by the field asked for: CHR's hypotheses, then `answer` to every question."""
    return {"[[ ## target_hypothesis ## ]]": dict(CONTRAST), "[[ ## answer ## ]]": {"answer": answer}}


@pytest.fixture
def tiny_corpus_dir(tmp_path) -> Path:
    return tiny_corpus(tmp_path / "corpus")


def _tiny_index(corpus_dir: Path, directory: Path, bm25_engine: str):
    from hyporag.retrieval import build_index, load_corpus, open_index

    corpus = load_corpus(str(corpus_dir))
    directory = build_index(corpus, directory, retriever="both", embedder_name="hashing-64", progress=False,
                            log=lambda m: None, bm25_engine=bm25_engine)
    return open_index(directory, corpus=corpus)


@pytest.fixture
def tiny_retriever(tiny_corpus_dir, tmp_path):
    """BM25 (bm25s) + dense (hashing embedder) over the tiny corpus."""
    return _tiny_index(tiny_corpus_dir, tmp_path / "index", "bm25s")


@pytest.fixture(params=["bm25s", "tantivy"])
def bm25_retriever(request, tiny_corpus_dir, tmp_path):
    """The tiny index with its BM25 part on each engine: what BM25 must do, it must do on both."""
    return _tiny_index(tiny_corpus_dir, tmp_path / f"index-{request.param}", request.param)


@pytest.fixture
def tiny_questions(tmp_path):
    from hyporag.questions.records import load_records

    return load_records(write_jsonl(tmp_path / "q.jsonl", QUESTIONS)).examples


class FakeOpenAI(BaseHTTPRequestHandler):
    """Answers /v1/chat/completions according to the server's `mode`."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.server.requests += 1
        mode = self.server.mode
        if mode == "slow":
            time.sleep(2)
            return
        if mode == "delay":
            time.sleep(0.3)
        if mode == "429":
            body, status = {"error": {"message": "rate limited"}}, 429
        else:
            content = "" if mode == "empty" else json.dumps({"answer": "A"})
            body, status = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": content}}],
                            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}, 200
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server():
    srv = HTTPServer(("127.0.0.1", 0), FakeOpenAI)
    srv.mode, srv.requests = "ok", 0
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()


@pytest.fixture
def read_only_dir(tmp_path):
    """A directory nobody can write into: a read-only tmpfs mounted there when this runs as root (root ignores file
    modes), else mode 0555. Skipped, with the reason, where neither holds."""
    import os
    import subprocess

    path = tmp_path / "read-only"
    path.mkdir()
    if os.geteuid() != 0:
        path.chmod(0o555)
        yield path
        path.chmod(0o755)
        return
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(path)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"no read-only directory here: running as root and mount failed ({mounted.stderr.strip()})")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], capture_output=True)
