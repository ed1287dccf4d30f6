"""A small OpenAI-compatible server on 127.0.0.1 for unit tests and error paths: it reports the models it serves
(`/v1/models`, llama.cpp's `/props`), answers every chat completion with one JSON reply (or, where the prompt holds
one of `by_prompt`'s keys, that key's reply and letter logprobs), and records each request's path and Authorization
header. Real-model tests use hyporag.testing.llama_server instead."""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Faults:
    """What a flaky server does to a share of its chat completions, each request's fate drawn from `seed` and its
    number (so a run against it is repeatable): an HTTP 500 (`error`), a hang of `hang_seconds` before an answer
    (`hang`), a body cut in half (`cut`)."""

    error: float = 0.0
    hang: float = 0.0
    cut: float = 0.0
    hang_seconds: float = 4.0
    seed: int = 0

    def fate(self, number: int) -> str:
        draw = random.Random(self.seed * 1_000_003 + number).random()
        for name, rate in (("error", self.error), ("hang", self.hang), ("cut", self.cut)):
            if draw < rate:
                return name
            draw -= rate
        return "ok"


@dataclass
class Served:
    models: list[str]
    model_path: str | None = None
    reply: dict = field(default_factory=lambda: {"answer": "A"})
    letter_logprobs: dict[str, float] | None = None  # alternatives at the answer letter's token, when asked for
    # a prompt holding a key (first match in order) gets that key's (reply, letter logprobs) instead
    by_prompt: dict[str, tuple[dict, dict[str, float] | None]] = field(default_factory=dict)
    refuse_logprobs: bool = False  # answer 400 to a request that asks for logprobs (some hosted models do)
    # faults by the 1-based number of a chat completion: its body cut in half (an HTTP 200 that is not a reply), or
    # an HTTP 500 (the server failed)
    cut: set[int] = field(default_factory=set)
    fail: set[int] = field(default_factory=set)
    faults: Faults | None = None  # random faults at given rates, seeded: a loaded or flaky server
    # a reply computed from the prompt (reply, letter logprobs), for runs of many questions; by_prompt is tried first
    reply_of: Callable[[str], tuple[dict, dict[str, float] | None]] | None = None
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Authorization)
    api_keys: list[str | None] = field(default_factory=list)  # each request's X-Api-Key header
    bodies: list[dict] = field(default_factory=list)  # each chat completion's request body
    port: int = 0
    _server: ThreadingHTTPServer | None = field(default=None, repr=False)
    _numbered: int = 0  # chat completions numbered so far (under `_lock`: a threaded server takes them at once)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def next_number(self) -> int:
        with self._lock:
            self._numbered += 1
            return self._numbered

    def answer_for(self, body: dict) -> tuple[dict, dict[str, float] | None]:
        prompt = json.dumps(body.get("messages") or body.get("prompt") or "")
        found = next((answer for key, answer in self.by_prompt.items() if json.dumps(key)[1:-1] in prompt), None)
        if found is None and self.reply_of is not None:
            found = self.reply_of(prompt)
        return found or (self.reply, self.letter_logprobs)

    def kill(self) -> None:
        """Stop serving now, as a killed server does: its port refuses every later connection."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def completions(self) -> int:
        return sum(path.endswith("/chat/completions") for path, _ in self.requests)

    def base(self, userinfo: str = "") -> str:
        return f"http://{userinfo + '@' if userinfo else ''}127.0.0.1:{self.port}/v1"


def _tokens(text: str, letter: str | None, alternatives: dict[str, float]) -> list[dict]:
    """The reply as tokens, the answer letter one of them with `alternatives` as its top logprobs (as llama.cpp and
    OpenAI report them: the chosen token's own logprob, then the ranked list)."""
    at = text.rfind(f'"{letter}"') + 1 if letter else -1
    pieces = [text[:at], letter, text[at + 1:]] if at > 0 else [text]
    ranked = sorted(alternatives.items(), key=lambda kv: -kv[1])
    return [{"token": piece, "logprob": alternatives.get(piece, 0.0) if piece == letter else 0.0, "bytes": None,
             "top_logprobs": [{"token": t, "logprob": v, "bytes": None} for t, v in ranked] if piece == letter
             else []} for piece in pieces if piece]


def _handler(served: Served):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def _send(self, body: dict, cut: bool = False, status: int = 200) -> None:
            data = json.dumps(body).encode()
            data = data[: len(data) // 2] if cut else data
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client timed out and left
                self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            served.requests.append((self.path, self.headers.get("Authorization")))
            served.api_keys.append(self.headers.get("X-Api-Key"))
            if self.path.endswith("/models"):
                self._send({"object": "list", "data": [{"id": m, "object": "model"} for m in served.models]})
            elif self.path == "/props" and served.model_path:
                self._send({"model_path": served.model_path})
            else:
                self.send_error(404)

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
            served.requests.append((self.path, self.headers.get("Authorization")))
            number = served.next_number() if self.path.endswith("/chat/completions") else 0
            served.api_keys.append(self.headers.get("X-Api-Key"))
            served.bodies.append(body)
            if body.get("logprobs") and served.refuse_logprobs:
                data = json.dumps({"error": {"message": "logprobs is not supported with this model",
                                             "type": "invalid_request_error"}}).encode()
                self.send_response(400)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            reply, letter_logprobs = served.answer_for(body)
            choice = {"index": 0, "finish_reason": "stop",
                      "message": {"role": "assistant", "content": json.dumps(reply)}}
            if body.get("logprobs") and letter_logprobs is not None:
                choice["logprobs"] = {"content": _tokens(json.dumps(reply), reply.get("answer"), letter_logprobs)}
            fate = served.faults.fate(number) if served.faults else "ok"
            if number in served.fail or fate == "error":
                self._send({"error": {"message": "injected server error"}}, status=500)
                return
            if fate == "hang":
                time.sleep(served.faults.hang_seconds)
            self._send({"id": "x", "object": "chat.completion", "created": 0, "model": served.models[0],
                        "choices": [choice], "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}},
                       cut=number in served.cut or fate == "cut")

    return Handler


@contextmanager
def fake_openai(models: list[str], model_path: str | None = None, reply: dict | None = None,
                letter_logprobs: dict[str, float] | None = None,
                by_prompt: dict[str, tuple[dict, dict[str, float] | None]] | None = None) -> Iterator[Served]:
    """A served model for the `with` block: `served.base()` is its /v1 URL."""
    served = Served(models, model_path, reply or {"answer": "A"}, letter_logprobs, dict(by_prompt or {}))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(served))
    server.daemon_threads = True
    served.port, served._server = server.server_port, server
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        served.kill()
