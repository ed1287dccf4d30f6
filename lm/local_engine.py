"""An in-process llama.cpp engine for DSPy 3.4: `dspy.LM("local/<name>", engine=LocalEngine(path))`.

xllamacpp ships prebuilt CPU wheels, so nobody compiles llama.cpp. The engine declares response-schema support:
DSPy's JSONAdapter then sends a JSON schema, and llama.cpp turns it into a grammar, so even a 1.5B model returns
parseable fields. One server per model file is shared by every LM built on it (loading costs seconds and RAM).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

from hyporag.foundation.errors import ModelError
from hyporag.lm.local_stream import answer_interruptibly
from hyporag.lm.speculative import Speculative

_SERVERS: dict[tuple[str, int], Any] = {}
_SERVERS_LOCK = threading.Lock()


def _server_for(path: Path, n_ctx: int, threads: int, cache_reuse: int = 0, host_cache_mib: int | None = None,
                speculative: str = "none", slots: int = 1):
    """The process's one server for these settings (loading a model costs seconds and RAM)."""

    key = (str(path), n_ctx, cache_reuse, host_cache_mib, Speculative.parse(speculative, measuring=True).label, slots)
    with _SERVERS_LOCK:
        if key not in _SERVERS:
            say_if_busy(threads)
            _SERVERS[key] = new_server(path, n_ctx, threads, cache_reuse, host_cache_mib, speculative, slots)
        return _SERVERS[key]


def say_if_busy(threads: int, load: float | None = None, cores: int | None = None) -> bool:
    """One line when the machine is already busy as the embedded model starts (its threads then share the cores:
    ~30 times slower was seen at a load of 10-13 on 2 cores), so a slow run is never a mystery."""
    cores = cores or os.cpu_count() or 1
    try:
        load = os.getloadavg()[0] if load is None else load
    except OSError:
        return False
    if load <= cores:
        return False
    print(f"hyporag: this machine is busy (load average {load:.1f} on {cores} cores): the embedded model's {threads} "
          "threads share them and run several times slower than usual (docs/results/speed.md); other jobs finishing "
          "first, or HYPORAG_LLAMA_THREADS=1 to take one core, helps", file=sys.stderr, flush=True)
    return True


def new_server(path: Path, n_ctx: int, threads: int, cache_reuse: int = 0, host_cache_mib: int | None = None,
               speculative: str = "none", slots: int = 1):
    """A fresh xllamacpp server (no slot or cache state shared with any other), e.g. to compare decoding modes.
    `slots` > 1 decodes that many requests together (their prompts share one `n_ctx` KV cache, so no request gets
    less context than with one slot): for bench/slots_ab.py, which found it no faster on 2 cores and its batched
    replies not always one slot's, so nothing else sets it."""

    try:
        import xllamacpp
    except ImportError as exc:
        raise ModelError("local models need the 'xllamacpp' package: pip install xllamacpp") from exc
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = n_ctx
    params.n_parallel = slots  # one slot keeps the whole prefix cache for the question being answered
    params.kv_unified = slots > 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.n_cache_reuse = cache_reuse  # >0: reuse cached chunks of at least this many tokens, shifted
    if host_cache_mib is not None:  # llama.cpp keeps earlier prompts' KV in RAM (default 8 GiB), 0 = off
        params.cache_ram_mib = host_cache_mib
    Speculative.parse(speculative, measuring=True).apply(params, threads)
    params.warmup = False
    params.verbosity = -1 if not os.environ.get("HYPORAG_LLAMA_VERBOSE") else 1
    return xllamacpp.Server(params)


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") or "" for part in content)


def _schema_of(response_format: Any) -> dict | None:
    """The JSON schema in lm15's flat form ({type, schema, name}) or OpenAI's nested form ({json_schema: {schema}})."""
    if not response_format:
        return None
    if isinstance(response_format.get("schema"), dict):
        return dict(response_format["schema"])
    nested = response_format.get("json_schema")
    if isinstance(nested, dict) and isinstance(nested.get("schema"), dict):
        return dict(nested["schema"])
    return None


def cap_schema(schema: Any, max_chars: int, max_items: int) -> Any:
    """Bound every free string (maxLength) and list (maxItems) in a JSON schema, so the grammar stops a small
    model from rambling: on a CPU at ~10 tokens/s every generated token is a tenth of a second."""
    if isinstance(schema, list):
        return [cap_schema(s, max_chars, max_items) for s in schema]
    if not isinstance(schema, dict):
        return schema
    capped = {k: cap_schema(v, max_chars, max_items) for k, v in schema.items()}
    if capped.get("type") == "string" and "enum" not in capped and "const" not in capped:
        capped.setdefault("maxLength", max_chars)
    if capped.get("type") == "array":
        capped.setdefault("maxItems", max_items)
    return capped


class EngineTimings:
    """llama.cpp's own per-call timings, summed: tokens processed and generated and the milliseconds each took,
    so a run can state the prefill and decode rates it actually got (the floor of its time)."""

    FIELDS = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n", "draft_n", "draft_n_accepted")

    def __init__(self) -> None:
        self.calls = 0
        self.totals = dict.fromkeys(self.FIELDS, 0.0)
        self._lock = threading.Lock()

    def add(self, timings: dict[str, Any]) -> None:
        with self._lock:
            self.calls += 1
            for name in self.FIELDS:
                self.totals[name] += float(timings.get(name) or 0)

    def snapshot(self) -> dict[str, float]:
        with self._lock:
            return {"calls": self.calls, **self.totals}


class LocalEngine:
    """DSPy custom engine: `complete(Request) -> Response` over an xllamacpp server living in this process."""

    supports_response_schema = True
    supported_params = frozenset({"temperature", "max_tokens", "top_p", "stop", "seed", "response_format",
                                  "logprobs"})

    def __init__(self, model_path: str | os.PathLike, n_ctx: int = 8192, threads: int | None = None,
                 max_string_chars: int | None = 320, max_list_items: int = 4, cache_reuse: int = 0,
                 host_cache_mib: int | None = None, speculative: str = "none", slots: int = 1):
        self.model_path = Path(model_path)
        self.slots = slots  # requests decoded together (n_parallel); 1: two gave no throughput (docs/results/speed.md)
        self.speculative = speculative  # none, ngram, ngram-mod, draft[:MODEL] (hyporag.lm.speculative)
        self.max_string_chars = max_string_chars
        self.max_list_items = max_list_items
        self.n_ctx = n_ctx
        self.cache_reuse = cache_reuse
        self.host_cache_mib = host_cache_mib
        self.threads = threads or max(1, os.cpu_count() or 1)
        self.timings = EngineTimings()
        self._server = None

    def __deepcopy__(self, memo: dict) -> LocalEngine:
        """Shared, not copied: DSPy deep-copies programs (and their LMs) per teleprompter candidate, and the engine
        is a handle to one loaded model."""
        return self

    @property
    def server_threads(self) -> int:
        """The threads its server runs on: HYPORAG_LLAMA_THREADS lets two jobs share a 2-core machine (one thread
        each) without touching the engine's state or cache keys."""
        return int(os.environ.get("HYPORAG_LLAMA_THREADS") or self.threads)

    @property
    def server(self):
        if self._server is None:
            self._server = _server_for(self.model_path, self.n_ctx, self.server_threads, self.cache_reuse,
                                       self.host_cache_mib, self.speculative, self.slots)
        return self._server

    def to_openai_body(self, request) -> dict[str, Any]:
        """The OpenAI-style chat body llama.cpp's server code understands (json_schema included)."""
        messages = []
        if request.system is not None:
            messages.append({"role": "system", "content": _text_of(request.system)})
        for message in request.messages:
            messages.append({"role": message.role, "content": _text_of(message.parts)})
        config = request.config
        body: dict[str, Any] = {"messages": messages, "temperature": config.temperature or 0.0}
        if config.max_tokens:
            body["max_tokens"] = config.max_tokens
        if config.top_p is not None:
            body["top_p"] = config.top_p
        if config.stop:
            body["stop"] = list(config.stop)
        if config.seed is not None:
            body["seed"] = config.seed
        if getattr(config, "logprobs", None) is not None:  # the answer letter's alternatives (lm.option_probs)
            body["logprobs"] = True
            body["top_logprobs"] = int(config.logprobs) or 1
        schema = _schema_of(config.response_format)
        if schema is not None:
            # llama.cpp compiles the schema to a grammar: output always parses, and (capped) stays short; uncapped,
            # the grammar is the one an OpenAI-compatible server builds from the same schema
            body["json_schema"] = (schema if self.max_string_chars is None
                                   else cap_schema(schema, self.max_string_chars, self.max_list_items))
        elif config.response_format:
            body["response_format"] = {"type": "json_object"}
        return body

    def complete(self, request):
        from dspy.lm15 import Message, Response, TextPart, Usage

        result = answer_interruptibly(self.server, self.to_openai_body(request))
        if not isinstance(result, dict) or "choices" not in result:
            detail = result.get("error") if isinstance(result, dict) else result
            raise ModelError(f"local model {self.model_path.name} failed: {str(detail)[:200]}")
        choice = result["choices"][0]
        usage = result.get("usage") or {}
        timings = result.get("timings") or {}
        self.timings.add(timings)
        finish = "length" if choice.get("finish_reason") == "length" else "stop"
        # llama.cpp's cache_n: prompt tokens served from its slot or host prompt cache, not processed again
        cached = timings.get("cache_n", (usage.get("prompt_tokens_details") or {}).get("cached_tokens"))
        return Response(
            id=result.get("id") or None,
            model=request.model,
            message=Message.assistant([TextPart(choice["message"].get("content") or "")]),
            finish_reason=finish,
            usage=Usage(input_tokens=usage.get("prompt_tokens"), output_tokens=usage.get("completion_tokens"),
                        cache_read_tokens=cached),
            logprobs=_token_logprobs(choice) if getattr(request.config, "logprobs", None) is not None else None,
        )

    def dump_state(self) -> dict[str, Any]:
        return {"model_path": str(self.model_path), "n_ctx": self.n_ctx, "threads": self.threads,
                "max_string_chars": self.max_string_chars, "max_list_items": self.max_list_items,
                "cache_reuse": self.cache_reuse, "host_cache_mib": self.host_cache_mib,
                "speculative": self.speculative}

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> LocalEngine:
        return cls(**state)


def _token_logprobs(choice: dict[str, Any]) -> tuple | None:
    """llama.cpp's OpenAI-style `logprobs.content` as lm15 token logprobs (None when it returned none)."""
    from dspy.lm15 import TokenLogprob, TopLogprob

    content = (choice.get("logprobs") or {}).get("content")
    if not content:
        return None
    return tuple(TokenLogprob(token=str(t.get("token", "")), logprob=float(t.get("logprob", 0.0)),
                              top=tuple(TopLogprob(token=str(a.get("token", "")), logprob=float(a.get("logprob", 0.0)))
                                        for a in t.get("top_logprobs") or []))
                 for t in content)
