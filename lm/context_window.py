"""How many tokens a model accepts and how many a text takes, so an over-long question is refused before any call.

A local GGUF model is counted exactly with its own tokenizer (built once from the GGUF header by transformers and
cached as a tokenizer.json, ~0.2 s to load afterwards) against the engine's `n_ctx`. A remote model's window comes
from `--context-tokens` or DSPy's model metadata; its text is estimated at CHARS_PER_TOKEN characters a token
(conservative for English), since its tokenizer is not on this machine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hyporag.foundation.errors import ModelError
from hyporag.foundation.paths import cache_dir

CHARS_PER_TOKEN = 3.0
MESSAGE_OVERHEAD = 8  # role markers and separators a chat template adds around each message


@dataclass
class ContextWindow:
    """A model's window (None when unknown) and how to count a text in its tokens."""

    model: str
    limit: int | None
    count: Callable[[str], int]
    exact: bool
    chars_per_token: float = CHARS_PER_TOKEN

    def messages_tokens(self, messages: list[dict]) -> int:
        return sum(self.count(str(m.get("content") or "")) + MESSAGE_OVERHEAD for m in messages) + MESSAGE_OVERHEAD


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def gguf_token_counter(model_path: Path) -> Callable[[str], int]:
    """Exact token counts with the GGUF model's own vocabulary and merges."""
    import tokenizers

    stat = model_path.stat()
    cached = cache_dir("tokenizers") / f"{model_path.stem}-{stat.st_size}-{int(stat.st_mtime)}.json"
    if not cached.is_file():
        try:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(model_path.parent), gguf_file=model_path.name)
        except Exception as exc:  # no `gguf` package, or a vocabulary transformers cannot convert
            raise ModelError(f"{model_path}: cannot read its tokenizer ({type(exc).__name__}: "
                             f"{str(exc)[:160]})") from None
        partial = cached.with_suffix(".partial")
        tokenizer.backend_tokenizer.save(str(partial))
        partial.replace(cached)
    tokenizer = tokenizers.Tokenizer.from_file(str(cached))
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)


def remote_context_limit(model: str) -> int | None:
    """The input window DSPy's bundled model metadata knows for a provider/model string, if any."""
    provider, _, name = model.partition("/")
    try:
        from dspy.clients.model_metadata import model_info

        info = model_info(provider, name) or {}
    except Exception:  # metadata is advisory; an unknown model is simply unknown
        return None
    limit = info.get("max_input_tokens") or info.get("max_tokens")
    return int(limit) if isinstance(limit, int | float) and limit > 0 else None


def served_context_limit(api_base: str) -> int | None:
    """The window an OpenAI-compatible server reports for its model: vLLM's `max_model_len` in /v1/models,
    llama.cpp's `n_ctx` in /props. One short request; any failure means unknown."""
    import json
    import urllib.request

    base = api_base.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    for url, path in ((f"{base}/models", ("data", 0, "max_model_len")),
                      (f"{base}/models", ("data", 0, "meta", "n_ctx")),
                      (f"{root}/props", ("default_generation_settings", "n_ctx"))):
        try:
            with urllib.request.urlopen(url, timeout=3) as response:
                value = json.loads(response.read(1 << 20))
            for key in path:
                value = value[key]
            if isinstance(value, int) and value > 0:
                return value
        except Exception:  # not this kind of server, or not reachable: try the next, then give up
            continue
    return None


def context_window(lm, override: int | None = None, api_base: str | None = None) -> ContextWindow:
    """The window of a `dspy.LM`: the local engine's `n_ctx` with exact counts, or a remote model's (`override`,
    what its server reports, or DSPy's metadata) with estimated counts."""
    engine = getattr(lm, "engine", None)
    model = str(getattr(lm, "model", "lm"))
    model_path = getattr(engine, "model_path", None)
    if model_path is not None:
        return ContextWindow(model, override or int(engine.n_ctx), gguf_token_counter(Path(model_path)), True)
    limit = override or (served_context_limit(api_base) if api_base else None) or remote_context_limit(model)
    return ContextWindow(model, limit, estimate_tokens, False)
