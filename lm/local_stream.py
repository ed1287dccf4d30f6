"""One reply of the in-process llama.cpp server, asked as a stream in a worker thread so that Ctrl-C is answered at
once (the plain call blocks the calling thread until the whole reply is written), and put back together as the
plain call's reply."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any


def answer_interruptibly(server, body: dict[str, Any]) -> dict[str, Any]:
    """The server's reply to `body`, asked as a stream in a worker thread so that Ctrl-C is answered at once: the
    caller stops waiting, the model stops at its next token (a prompt being read is finished first; a second Ctrl-C
    exits at once, as every finished row is already on disk), and KeyboardInterrupt goes on up. The chunks are put
    back together into the one reply the plain call returns (content, usage, llama.cpp's timings, and the logprobs of
    every token that wrote text: the answer letter's alternatives are the plain call's, a stripped markdown fence and
    the end-of-generation token are not listed)."""
    chunks: list[dict] = []
    stop, done, failed = threading.Event(), threading.Event(), []

    def on_chunk(chunk: dict) -> bool:
        chunks.append(chunk)
        return stop.is_set()  # True ends the generation

    def ask() -> None:
        try:
            server.handle_chat_completions({**body, "stream": True, "stream_options": {"include_usage": True}},
                                           on_chunk)
        except BaseException as exc:  # noqa: BLE001 (raised again in the caller's thread)
            failed.append(exc)
        finally:
            done.set()

    threading.Thread(target=ask, daemon=True, name="hyporag-llama").start()
    try:
        while not done.wait(0.2):
            pass
    except KeyboardInterrupt:
        stop.set()
        print("hyporag: stopping: the embedded model ends its current step first (Ctrl-C again stops at once; "
              "finished rows are kept)", file=sys.stderr, flush=True)
        try:
            done.wait()
        except KeyboardInterrupt:
            os._exit(130)
        raise
    if failed:
        raise failed[0]
    return assembled(chunks)


def assembled(chunks: list[dict]) -> dict[str, Any]:
    """A streamed reply as the non-streamed one: the text and token logprobs joined, the last finish reason, and
    the usage and timings of the closing chunk (an error chunk is returned as it came)."""
    errors = [c for c in chunks if "error" in c or "choices" not in c]
    if errors:
        return errors[0]
    text, tokens, finish = [], [], None
    for chunk in chunks:
        for choice in chunk["choices"]:
            text.append((choice.get("delta") or {}).get("content") or "")
            tokens += ((choice.get("logprobs") or {}).get("content") or [])
            finish = choice.get("finish_reason") or finish
    closing = chunks[-1] if chunks else {}
    choice = {"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": "".join(text)}}
    if tokens:
        choice["logprobs"] = {"content": tokens}
    return {"id": closing.get("id"), "choices": [choice], "usage": closing.get("usage") or {},
            "timings": closing.get("timings") or {}}
