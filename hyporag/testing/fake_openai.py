"""A small OpenAI-compatible server on 127.0.0.1 for unit tests and error paths: it reports the models it serves
(`/v1/models`, llama.cpp's `/props`), answers every chat completion with one JSON reply (or, where the prompt holds
one of `by_prompt`'s keys, that key's reply and letter logprobs), and records each request's path and Authorization
header. Real-model tests use hyporag.testing.llama_server instead."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Authorization)
    api_keys: list[str | None] = field(default_factory=list)  # each request's X-Api-Key header
    bodies: list[dict] = field(default_factory=list)  # each chat completion's request body
    port: int = 0

    def answer_for(self, body: dict) -> tuple[dict, dict[str, float] | None]:
        prompt = json.dumps(body.get("messages") or body.get("prompt") or "")
        return next((answer for key, answer in self.by_prompt.items() if json.dumps(key)[1:-1] in prompt),
                    (self.reply, self.letter_logprobs))

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
            number = served.completions
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
            if number in served.fail:
                self._send({"error": {"message": "injected server error"}}, status=500)
                return
            self._send({"id": "x", "object": "chat.completion", "created": 0, "model": served.models[0],
                        "choices": [choice], "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}},
                       cut=number in served.cut)

    return Handler


@contextmanager
def fake_openai(models: list[str], model_path: str | None = None, reply: dict | None = None,
                letter_logprobs: dict[str, float] | None = None,
                by_prompt: dict[str, tuple[dict, dict[str, float] | None]] | None = None) -> Iterator[Served]:
    """A served model for the `with` block: `served.base()` is its /v1 URL."""
    served = Served(models, model_path, reply or {"answer": "A"}, letter_logprobs, dict(by_prompt or {}))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(served))
    served.port = server.server_port
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
