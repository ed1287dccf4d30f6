"""One LM served by several OpenAI-compatible endpoints: a DSPy engine that sends each call to the least busy healthy
endpoint through LiteLLM, and keeps the pool's health itself.

A transient fault (HTTP 5xx, 429, a timeout, a refused connection, a body cut short) is retried at once on another
endpoint, and after every endpoint has been tried in a call, with backoff. An endpoint cools down only after it has
failed COOL_AFTER times in a row (a success anywhere in between resets its count), so the one-in-twenty 500 of a
loaded server never takes it out; while every endpoint is cooling, calls probe the one whose cooldown ends first.
A call gets `max_attempts` (three per endpoint, or the run's retries if more). The pool is down, which stops the run
with its rows kept (exit 3, as one dead server does), when a call has reached no endpoint at all: every attempt
refused or timed out. A call whose servers answered with errors to the end fails its question alone, as an error
row a re-run retries, as one server's persistent 500 does. The engine counts calls, tokens, seconds and failed
attempts per endpoint (run.json records them).

LiteLLM's Router was used here before: built with `allowed_fails=0` and a cooldown, one transient error per
endpoint within the cooldown left no endpoint, so a pool of two faulty servers stopped after 33 of 10,000 questions
where one such server alone finished (docs/failure-modes.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dspy.clients.engines.litellm_engine import _LiteLLMConfig
from dspy.clients.engines.litellm_errors import litellm_errors

from hyporag.foundation.redact import basic_auth, redact_text, split_userinfo

COOL_AFTER = 3  # failures in a row before an endpoint rests
COOLDOWN_SECONDS = 30.0  # the longest rest; the first is BASE_COOLDOWN and each further failure doubles it
BASE_COOLDOWN = 1.0
BACKOFF_SECONDS = 0.1  # the first wait once every endpoint has failed in a call, doubled each round, at most 4 s


def proxied_headers(credentials: tuple[str, str], api_key: str | None) -> dict[str, str]:
    """A basic-auth proxy's credentials in `Authorization`, and the server's key beside them as `X-Api-Key` (as
    hyporag.lm.served_auth sends them on the native engine)."""
    return {"Authorization": basic_auth(*credentials), **({"X-Api-Key": api_key} if api_key else {})}


def _endpoint(base: str) -> str:
    return base.rstrip("/")


def _unreachable(exc: BaseException) -> bool:
    """Whether the attempt reached no server: refused, reset or timed out. LiteLLM reports a refused connection as
    an HTTP 500 ("Connection error."), so the chain of causes is read, not the status."""
    from dspy import lm15

    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        names = {c.__name__ for c in type(exc).__mro__}
        if isinstance(exc, (lm15.TransportError, lm15.TimeoutError, ConnectionError, TimeoutError)) or names & {
                "ConnectError", "ConnectTimeout", "ReadTimeout", "TimeoutException", "APIConnectionError",
                "APITimeoutError", "RemoteProtocolError"}:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _transient(exc: BaseException) -> bool:
    """A fault the next attempt may not meet: the server failed or was unreachable, not the request."""
    from dspy import lm15

    return isinstance(exc, (lm15.TransportError, lm15.TimeoutError, lm15.ServerError, lm15.RateLimitError))


@dataclass
class Endpoint:
    """One server of the pool: where it is, how to reach it, and its health."""

    base: str
    arguments: dict[str, Any]  # api_base, api_key, headers: what LiteLLM needs to reach it
    in_flight: int = 0
    failures_in_row: int = 0
    cool_until: float = 0.0
    usage: dict[str, Any] = field(default_factory=lambda: {"calls": 0, "input_tokens": 0, "output_tokens": 0,
                                                           "seconds": 0.0, "failures": 0})


class RoutedEngine(_LiteLLMConfig):
    """DSPy custom engine: `complete(Request) -> Response` over `api_bases`, least busy healthy endpoint first."""

    def __init__(self, model: str, api_bases: Sequence[str], api_key: str | None = None,
                 timeout: float | None = None, num_retries: int = 3, cooldown: float = COOLDOWN_SECONDS):
        super().__init__(model_type="chat")
        self.model = model
        # endpoints as recorded and printed: without the user and password a URL may carry (they go as a header)
        split = [split_userinfo(_endpoint(b)) for b in api_bases]
        self.api_bases = [base for base, _ in split]
        self.endpoints = [Endpoint(base, {"api_base": base, "api_key": api_key or "none",
                                          **({"extra_headers": proxied_headers(auth, api_key)} if auth else {}),
                                          **({"timeout": timeout} if timeout else {})})
                          for base, auth in split]
        self.cooldown = cooldown
        # three tries of every endpoint, or the run's retries if more: at the 9% faults of a loaded pair of servers a
        # call fails all six attempts once in two million
        self.max_attempts = max(num_retries + 1, 3 * len(self.endpoints))
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict) -> RoutedEngine:
        """Shared, not copied: DSPy deep-copies programs (and their LMs); the pool and its counts are one."""
        return self

    # -- the pool's health ----------------------------------------------------------------------------------------
    def _pick(self, tried: set[str]) -> Endpoint:
        """The least busy endpoint not cooling (one not yet tried in this call first); while every one is cooling,
        the one whose rest ends first (a probe)."""
        with self._lock:
            now = time.monotonic()
            ready = [e for e in self.endpoints if e.cool_until <= now] or [min(self.endpoints,
                                                                               key=lambda e: e.cool_until)]
            fresh = [e for e in ready if e.base not in tried] or ready
            chosen = min(fresh, key=lambda e: (e.in_flight, e.usage["calls"]))
            chosen.in_flight += 1
            return chosen

    def _finished(self, endpoint: Endpoint, ok: bool, seconds: float, usage: Any = None) -> None:
        with self._lock:
            endpoint.in_flight -= 1
            endpoint.usage["seconds"] += seconds
            if ok:
                endpoint.failures_in_row, endpoint.cool_until = 0, 0.0
                endpoint.usage["calls"] += 1
                endpoint.usage["input_tokens"] += int(getattr(usage, "prompt_tokens", 0) or 0)
                endpoint.usage["output_tokens"] += int(getattr(usage, "completion_tokens", 0) or 0)
                return
            endpoint.usage["failures"] += 1
            endpoint.failures_in_row += 1
            if endpoint.failures_in_row >= COOL_AFTER:  # it keeps failing: rest, longer each time
                rest = min(self.cooldown, BASE_COOLDOWN * 2 ** (endpoint.failures_in_row - COOL_AFTER))
                endpoint.cool_until = time.monotonic() + rest

    # -- one call ---------------------------------------------------------------------------------------------------
    def complete(self, request):
        from dspy import lm15
        from dspy.clients._litellm import get_litellm

        litellm = get_litellm(feature="LiteLLM engine")
        data = self._arguments(request)
        for key in ("model", "api_base", "api_key", "num_retries"):  # each endpoint's own, and no retry inside
            data.pop(key, None)
        tried: set[str] = set()
        last: BaseException | None = None
        reached = False  # whether any attempt got an answer from a server, even an error
        for attempt in range(self.max_attempts):
            endpoint = self._pick(tried)
            if endpoint.base in tried and len(tried) == len(self.endpoints):  # a new round: every one failed already
                time.sleep(min(4.0, BACKOFF_SECONDS * 2 ** (attempt // len(self.endpoints) - 1)))
            tried.add(endpoint.base)
            started = time.perf_counter()
            try:
                with litellm_errors(model=request.model):
                    raw = litellm.completion(model=self.model, num_retries=0, **endpoint.arguments, **data)
            except Exception as exc:
                self._finished(endpoint, False, time.perf_counter() - started)
                if not _transient(exc):
                    raise  # a bad request fails its question on any endpoint
                last = exc
                reached = reached or not _unreachable(exc)
                continue
            self._finished(endpoint, True, time.perf_counter() - started, getattr(raw, "usage", None))
            return self._response(raw, request)
        why = redact_text(str(last).splitlines()[0])[:200] if last else "no attempt"
        if not reached:  # no server answered at all: every further question would fail alike, so the run stops
            raise lm15.TransportError(f"every endpoint of {self.model} failed ({', '.join(self.api_bases)}): "
                                      f"{why}") from last
        raise lm15.ServerError(f"{self.model}: {self.max_attempts} attempts across the pool failed ({why}); the "
                               "servers answer, so this question alone is an error row") from last

    def snapshot(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {e.base: {**e.usage, "seconds": round(e.usage["seconds"], 3)} for e in self.endpoints}

    def dump_state(self) -> dict[str, Any]:
        return {"model": self.model, "api_bases": self.api_bases}
