"""The reader's probability for every option, read from the answer call itself (no extra call, no extra token).

The answer call's reply holds the option letter as one token (`{"answer": "B"}`, after any reasoning under the
paper protocol). At that token, the backend's `top_logprobs` list the alternatives it weighed; the options'
letters among them, renormalised over the options, are the reader's distribution. Tokens that strip to the same
letter (`B`, ` B`) are one option (log-sum-exp). The probabilities are the model's own, before any grammar that
constrains the reply (llama.cpp reports them so), so they are comparable across methods.

Status of a row: `ok`; `partial` (a letter outside the returned top-k: the other letters' share would be an
estimate, so no probability is derived); `none` (the backend returned no logprobs); `unlocated` (no token of the
reply is the chosen letter); `unparsed` (no answer to locate).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

TOP_LOGPROBS = 20  # OpenAI's maximum; llama.cpp and vLLM accept it too
_STRIP = " \t\n\r\"'`*.:,;()[]{}"


def wants_logprobs(lm: Any) -> bool:
    """Backends known to return token logprobs for chat completions: the embedded engine, any OpenAI-compatible
    server (`api_base`, a pool), and OpenAI's own models. Others (Anthropic, DummyLM) are not asked."""
    if getattr(lm, "_hyporag_refuses_logprobs", False):  # it answered 400 to a request for them once already
        return False
    model = str(getattr(lm, "model", ""))
    kwargs = getattr(lm, "kwargs", None) or {}
    return (model.startswith("local/") or bool(kwargs.get("api_base")) or bool(getattr(lm, "_hyporag_endpoints", None))
            or model.startswith("openai/"))


def _entries(logprobs: Any) -> list[dict[str, Any]]:
    content = logprobs.get("content") if isinstance(logprobs, dict) else getattr(logprobs, "content", None)
    return [dict(entry) for entry in content or [] if entry is not None]


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def letter_logprobs(logprobs: Any, letters: Sequence[str], chosen: str | None
                    ) -> tuple[dict[str, float | None] | None, str]:
    """(log-probability per option letter, renormalised over the options when every letter was returned; status)."""
    if not chosen:
        return None, "unparsed"
    entries = _entries(logprobs)
    if not entries:
        return None, "none"
    position = next((i for i in range(len(entries) - 1, -1, -1)
                     if str(entries[i].get("token", "")).strip(_STRIP) == chosen), None)
    if position is None:
        return None, "unlocated"
    entry = entries[position]
    seen: dict[str, float] = {}  # token text -> logprob: the chosen token may repeat inside its own top list
    for candidate in [entry, *(dict(t) for t in entry.get("top_logprobs") or [])]:
        token, value = str(candidate.get("token", "")), candidate.get("logprob")
        if isinstance(value, (int, float)) and math.isfinite(value):
            seen.setdefault(token, float(value))
    by_letter: dict[str, list[float]] = {}
    for token, value in seen.items():
        letter = token.strip(_STRIP)
        if letter in letters:
            by_letter.setdefault(letter, []).append(value)
    raw = {letter: _logsumexp(values) for letter, values in by_letter.items()}
    if len(raw) < len(letters):
        return {letter: round(raw[letter], 6) if letter in raw else None for letter in letters}, "partial"
    total = _logsumexp(list(raw.values()))
    return {letter: round(raw[letter] - total, 6) for letter in letters}, "ok"
