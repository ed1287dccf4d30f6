"""Record an engine's llama.cpp requests and replay them on other servers: the way to compare decoding modes on
exactly the requests hyporag sends, with each server's prompt cache passing through the same states."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

from hyporag.lm.local_stream import assembled


class RecordingServer:
    """Stands in for a LocalEngine's server: forwards each request and keeps it with its reply."""

    def __init__(self, server):
        self.server, self.calls = server, []

    def handle_chat_completions(self, body: dict, callback: Callable[[dict], bool] | None = None) -> Any:
        """The plain call, or the streamed one the engine makes (chunks to `callback`); either is recorded as the
        plain request with its whole reply, which is what a replay sends."""
        plain = {k: v for k, v in copy.deepcopy(body).items() if k not in ("stream", "stream_options")}
        if callback is None:
            result = self.server.handle_chat_completions(body)
            self.calls.append((plain, reply_text(result)))
            return result
        chunks: list[dict] = []

        def keep(chunk: dict) -> bool:
            chunks.append(chunk)
            return callback(chunk)

        result = self.server.handle_chat_completions(body, keep)
        self.calls.append((plain, reply_text(assembled(chunks))))
        return result


def reply_text(result: dict) -> str:
    if not isinstance(result, dict) or "choices" not in result:
        return f"<error: {str(result)[:200]}>"
    return result["choices"][0]["message"].get("content") or ""


def replay(server, bodies: Iterable[dict]) -> list[dict]:
    """The results of `server` for these requests, in order (the same order leaves its prefix cache in the same
    states as the recording server's); `reply_text` of each is its reply."""
    return [server.handle_chat_completions(body) for body in bodies]
