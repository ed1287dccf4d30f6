"""One LM served by several OpenAI-compatible endpoints: a DSPy engine over LiteLLM's `Router`.

The Router sends each call to the least busy endpoint, retries a failed call on another, and cools a failing
endpoint down while the run goes on. The engine counts calls, tokens, seconds and failures per endpoint (run.json
records them); when every endpoint has failed it raises a transport error, which stops the run with its rows kept
(exit 3), as a dead single server does.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

from dspy.clients.engines.litellm_engine import _LiteLLMConfig
from dspy.clients.engines.litellm_errors import litellm_errors

from hyporag.foundation.redact import basic_auth, redact_text, split_userinfo

GROUP = "hyporag-pool"
_ENGINES: weakref.WeakValueDictionary[str, RoutedEngine] = weakref.WeakValueDictionary()
COOLDOWN_SECONDS = 30.0  # a failed endpoint rests this long before the Router tries it again


def proxied_headers(credentials: tuple[str, str], api_key: str | None) -> dict[str, str]:
    """A basic-auth proxy's credentials in `Authorization`, and the server's key beside them as `X-Api-Key` (as
    hyporag.lm.served_auth sends them on the native engine)."""
    return {"Authorization": basic_auth(*credentials), **({"X-Api-Key": api_key} if api_key else {})}


def _endpoint(base: str) -> str:
    return base.rstrip("/")


class RoutedEngine(_LiteLLMConfig):
    """DSPy custom engine: `complete(Request) -> Response` through a LiteLLM Router over `api_bases`."""

    def __init__(self, model: str, api_bases: Sequence[str], api_key: str | None = None,
                 timeout: float | None = None, num_retries: int = 3, cooldown: float = COOLDOWN_SECONDS):
        super().__init__(model_type="chat")
        import litellm
        from litellm import Router

        self.model = model
        # endpoints as recorded and printed: without the user and password a URL may carry (they go as a header)
        split = [split_userinfo(_endpoint(b)) for b in api_bases]
        self.api_bases = [base for base, _ in split]
        self.group = f"{GROUP}-{id(self):x}"  # one Router per engine; LiteLLM's callbacks are process-wide
        deployments = [{"model_name": self.group, "model_info": {"id": base},
                        "litellm_params": {"model": model, "api_base": base, "api_key": api_key or "none",
                                           **({"extra_headers": proxied_headers(auth, api_key)} if auth else {}),
                                           **({"timeout": timeout} if timeout else {})}}
                       for base, auth in split]
        # at least one retry per other endpoint, so a dead one is always stepped over within one call
        self.router = Router(model_list=deployments, routing_strategy="least-busy",
                             num_retries=max(num_retries, len(self.api_bases)), allowed_fails=0,
                             cooldown_time=cooldown, retry_after=0, timeout=timeout)
        self._lock = threading.Lock()
        self.usage = {base: {"calls": 0, "input_tokens": 0, "output_tokens": 0, "seconds": 0.0, "failures": 0}
                      for base in self.api_bases}
        _ENGINES[self.group] = self
        if not any(isinstance(c, _FailureCounter) for c in litellm.callbacks):
            litellm.callbacks.append(_FailureCounter())

    def __deepcopy__(self, memo: dict) -> RoutedEngine:
        """Shared, not copied: DSPy deep-copies programs (and their LMs); the pool and its counts are one."""
        return self

    def complete(self, request):
        from dspy import lm15

        data = self._arguments(request)
        for key in ("model", "api_base", "api_key", "num_retries"):  # the Router's deployments and policy decide
            data.pop(key, None)
        started = time.perf_counter()
        try:
            with litellm_errors(model=request.model):
                raw = self.router.completion(model=self.group, **data)
        except (lm15.TransportError, lm15.TimeoutError, lm15.ServerError, lm15.RateLimitError) as exc:
            # the Router retried on every endpoint (or all are cooling down after failing): the pool is down, which
            # stops the run with its rows kept, as one dead server does; a bad request still fails one question
            raise lm15.TransportError(f"every endpoint of {self.model} failed ({', '.join(self.api_bases)}): "
                                      f"{redact_text(str(exc).splitlines()[0])[:200]}") from exc
        base = _endpoint(str((getattr(raw, "_hidden_params", None) or {}).get("model_id") or "?"))
        usage = getattr(raw, "usage", None)
        with self._lock:
            record = self.usage.setdefault(base, {"calls": 0, "input_tokens": 0, "output_tokens": 0,
                                                  "seconds": 0.0, "failures": 0})
            record["calls"] += 1
            record["input_tokens"] += int(getattr(usage, "prompt_tokens", 0) or 0)
            record["output_tokens"] += int(getattr(usage, "completion_tokens", 0) or 0)
            record["seconds"] += time.perf_counter() - started
        return self._response(raw, request)

    def failed(self, base: str) -> None:
        with self._lock:
            if base in self.usage:
                self.usage[base]["failures"] += 1

    def snapshot(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {base: {**record, "seconds": round(record["seconds"], 3)} for base, record in self.usage.items()}

    def dump_state(self) -> dict[str, Any]:
        return {"model": self.model, "api_bases": self.api_bases}


def _failure_counter_base():
    from litellm.integrations.custom_logger import CustomLogger

    return CustomLogger


class _FailureCounter(_failure_counter_base()):
    """LiteLLM calls this (one per process: it keeps one logger of a class) for every failed attempt; it tells the
    attempt's engine, found by its Router's model group, which endpoint failed."""

    def log_failure_event(self, kwargs, response_obj, start_time, end_time) -> None:
        params = kwargs.get("litellm_params") or {}
        engine = _ENGINES.get((params.get("metadata") or {}).get("model_group"))
        if engine is not None and params.get("api_base"):
            engine.failed(_endpoint(str(params["api_base"])))
