"""Language models per role: any DSPy/LiteLLM model string, or `local:<alias|path.gguf>` run in-process.

Roles let a strong model form hypotheses while a small one answers (the CHR paper's 72B/8B split is
`--hypothesis-lm X --answer-lm Y`). Each role carries its own adapter: local GGUF models use a JSON adapter, whose
schema llama.cpp enforces (the lean one under the fast protocol); remote models keep DSPy's ChatAdapter (which
falls back to JSON itself) or, behind an `api_base`, JSONAdapter, unless `--adapter` asks for another.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dspy

from hyporag.foundation.errors import ModelError
from hyporag.foundation.paths import cache_dir
from hyporag.foundation.redact import redact_text, split_userinfo
from hyporag.lm.gguf import DEFAULT_MODEL, resolve_model_path
from hyporag.lm.lean_adapter import LeanAdapter
from hyporag.lm.local_engine import LocalEngine
from hyporag.lm.model_identity import (
    configure_identity_cache,
    digest,
    identity_cache_scope,
    is_loopback,
    local_identity,
    register,
    server_identity,
)
from hyporag.lm.pool import routed_lm
from hyporag.lm.served_auth import authed_lm
from hyporag.lm.speculative import Speculative

DEFAULT_LM = f"local:{DEFAULT_MODEL}"
DEFAULT_TIMEOUT = 120.0  # seconds per remote call: a stalled hosted API fails in 2 minutes, not lm15's 10
# a CPU server on this machine reads a 4,000-token paper-protocol prompt at ~95 tokens/s and writes 512 tokens at
# ~35/s: ~57 s idle, several times that when the cores are shared, so loopback endpoints get 10 minutes
LOOPBACK_TIMEOUT = 600.0


def default_timeout(api_base: str | None) -> float:
    """Seconds per remote call when --timeout is not given: longer for a server on 127.0.0.1 (see above)."""

    return LOOPBACK_TIMEOUT if is_loopback(api_base) else DEFAULT_TIMEOUT


def identity_of(lm: dspy.BaseLM) -> dict[str, Any]:
    """What identifies the weights behind `lm` (recorded in run.json; see programs.model_identity)."""
    return getattr(lm, "_hyporag_identity", None) or {"kind": "model-string", "model": str(getattr(lm, "model", lm))}

ROLES = ("hypothesis", "answer", "judge")


def configure_cache(directory: str | os.PathLike | None = None, enabled: bool = True) -> Path:
    """DSPy's disk cache under the project cache dir, so an identical re-run costs no LM calls."""

    path = Path(directory) if directory else cache_dir("dspy")
    configure_identity_cache(enable_disk_cache=enabled, enable_memory_cache=enabled, disk_cache_dir=str(path))
    return path


def build_lm(spec: str, api_base: str | Sequence[str] | None = None, api_key: str | None = None,
             temperature: float = 0.0, max_tokens: int = 512, n_ctx: int = 8192, cache: bool = True,
             timeout: float | None = None, num_retries: int = 3, cap_outputs: bool = True,
             speculative: str = "none") -> dspy.LM:
    """A `dspy.LM` for a model string; `local:` specs get the in-process llama.cpp engine, whose output grammar
    caps strings and lists (`cap_outputs`, the fast protocol) or keeps DSPy's schema as a server gets it (paper).
    Several `api_base`s make one LM over all of them (`hyporag.lm.router`); one behaves as a plain string.
    `speculative` is the embedded engine's decoding (hyporag.lm.speculative); a server sets its own."""

    bases = [api_base] if isinstance(api_base, str) else list(api_base or [])
    if len(bases) > 1 and not spec.startswith("local:"):
        if "/" not in spec:
            raise ModelError(f"LM {spec!r}: use a DSPy/LiteLLM model string like 'openai/<served alias>'")
        return routed_lm(spec, bases, api_key, temperature, max_tokens, cache,
                         timeout or max(map(default_timeout, bases)), num_retries)
    api_base = bases[0] if bases else None

    if spec.startswith("local:"):
        target = spec.removeprefix("local:") or DEFAULT_MODEL
        path = resolve_model_path(target)
        name = Path(target).stem if target.endswith(".gguf") else target

        mode = Speculative.parse(speculative)
        engine = LocalEngine(path, n_ctx=n_ctx, max_string_chars=320 if cap_outputs else None,
                             speculative=mode.label)
        identity = {**local_identity(path, None if target.endswith(".gguf") else target), "capped": cap_outputs}
        # the model name is part of DSPy's cache key: it carries the weights' identity (two `model.gguf` files are
        # two models) and the output cap (capped and uncapped replies must never answer for each other)
        model = f"local/{name}@{digest(identity)[:12]}"
        if mode.mode != "none":  # recorded, not keyed: greedy speculative decoding gives plain decoding's replies
            identity = {**identity, "speculative": mode.label}
        lm = dspy.LM(model, engine=engine, temperature=temperature, max_tokens=max_tokens, cache=cache)
        lm._hyporag_identity = identity
        register(lm.model, "", identity)  # its calls go to hyporag's cache, never the user's own
        return lm
    if "/" not in spec:
        raise ModelError(f"LM {spec!r}: use a DSPy/LiteLLM model string like 'openai/gpt-4o-mini' or 'local:<alias>'")
    # LiteLLM's bundled price map, not a fetch from the web: set on `import hyporag` (hyporag/__init__.py)
    kwargs: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens, "cache": cache,
                              "num_retries": num_retries, "timeout": timeout or default_timeout(api_base)}
    if api_base and split_userinfo(api_base)[1]:  # a proxy's user and password: basic auth on DSPy's native engine
        return authed_lm(spec, api_base, api_key, kwargs.pop("timeout"), **kwargs)
    if api_base:
        kwargs["api_base"] = api_base
    if api_key:
        kwargs["api_key"] = api_key
    lm = dspy.LM(spec, **kwargs)
    # a hosted model string names one model; behind an api_base the name is the server's alias for whatever it loaded
    identity = server_identity(api_base) if api_base else {"kind": "model-string", "model": spec}
    lm._hyporag_identity = identity
    if api_base:
        register(lm.model, api_base, identity)
    return lm


def endpoint_usage(lm: dspy.BaseLM) -> dict[str, dict[str, Any]] | None:
    """Calls, tokens, seconds and failures per endpoint of an LM over several servers (None for any other)."""
    engine = engine_of(lm)
    return engine.snapshot() if hasattr(engine, "snapshot") else None


def explain_lm_error(exc: BaseException) -> str:
    """One line for a failed LM call; a read time-out says which flag moves it (lm15's text names its own API)."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    waited = re.search(r"no bytes for ([0-9.]+)s", text)
    if waited or "timed out" in text:
        model = getattr(exc, "model", None) or text.partition("]")[0].lstrip("[")
        seconds = f"{float(waited.group(1)):g} s" if waited else "the time-out"
        return redact_text(f"{model} did not answer within {seconds}; raise --timeout (seconds per LM call, default "
                f"{DEFAULT_TIMEOUT:g}, {LOOPBACK_TIMEOUT:g} for a server on 127.0.0.1) for a slow model, or check "
                "the server")
    return redact_text(text)[:300]


def engine_of(lm: dspy.BaseLM):
    """The in-process engine behind an embedded-model LM (its llama.cpp timings and server), or None for any other:
    the one place that reads where DSPy keeps an LM's `engine=`."""
    return getattr(lm, "_engine_spec", None)


def is_local(lm: dspy.BaseLM) -> bool:
    return str(getattr(lm, "model", "")).startswith("local/")


ADAPTERS = ("auto", "lean", "json", "chat")


def adapter_for(lm: dspy.BaseLM, choice: str = "auto", local: str = "lean") -> dspy.Adapter:
    """`auto`: for local GGUF models the protocol's `local` choice (lean under the fast protocol: short prompts
    sharing a cached prefix, prefill being the embedded model's cost; JSON under the paper protocol: the prompts a
    server gets, so served and in-process runs agree); JSON for self-hosted OpenAI-compatible servers (an
    `api_base`: llama.cpp, vLLM, Ollama), whose small models break ChatAdapter's `[[ ## field ## ]]` format (a
    1.5B writes `[[ ## answer ## ]] = 'A'`, and DSPy's JSON retry doubles the calls); ChatAdapter for hosted APIs."""
    if choice not in ADAPTERS:
        raise ModelError(f"unknown adapter {choice!r}: use one of {', '.join(ADAPTERS)}")
    if choice == "auto":
        served = bool((getattr(lm, "kwargs", None) or {}).get("api_base") or getattr(lm, "_hyporag_endpoints", None))
        choice = local if is_local(lm) else "json" if served else "chat"
    if choice == "lean":
        return LeanAdapter()
    return dspy.JSONAdapter() if choice == "json" else dspy.ChatAdapter()


@dataclass
class RoleLM:
    """One role's model and the adapter that formats its prompts."""

    spec: str
    lm: dspy.BaseLM
    adapter: dspy.Adapter

    @contextlib.contextmanager
    def context(self) -> Iterator[None]:
        """Run predictors under this role's LM and adapter, with hyporag's cache for hyporag's own LMs only (the
        user's `dspy.cache` serves everything else and is back in place when the call ends)."""
        with identity_cache_scope(), dspy.context(lm=self.lm, adapter=self.adapter):
            yield


@dataclass
class LMRoles:
    """The LMs a program uses: `hypothesis` (hypotheses, rewrites, pseudo-documents), `answer`, `judge`."""

    hypothesis: RoleLM
    answer: RoleLM
    judge: RoleLM

    @classmethod
    def from_lms(cls, hypothesis: dspy.BaseLM, answer: dspy.BaseLM | None = None,
                 judge: dspy.BaseLM | None = None) -> LMRoles:
        """Roles from ready LM objects (tests pass DummyLMs here)."""
        answer = answer or hypothesis
        judge = judge or answer
        lms = (hypothesis, answer, judge)
        return cls(*(RoleLM(str(getattr(lm, "model", "lm")), lm, adapter_for(lm)) for lm in lms))

    @classmethod
    def from_specs(cls, lm: str = DEFAULT_LM, hypothesis_lm: str | None = None, answer_lm: str | None = None,
                   judge_lm: str | None = None, adapter: str = "auto", local_adapter: str = "lean",
                   role_api_bases: dict[str, list[str]] | None = None, **build_kwargs: Any) -> LMRoles:
        """Roles from CLI flags: `--lm` for all, each role flag overriding it (and a role's own endpoints the
        shared ones); one LM object per distinct model and endpoints."""
        built: dict[tuple, dspy.BaseLM] = {}

        def role(name: str, spec: str | None) -> RoleLM:
            spec = spec or lm
            kwargs = dict(build_kwargs)
            if (role_api_bases or {}).get(name):
                kwargs["api_base"] = role_api_bases[name]
            base = kwargs.get("api_base")
            key = (spec, base if isinstance(base, str) else tuple(base or ()))
            if key not in built:
                built[key] = build_lm(spec, **kwargs)
            return RoleLM(spec, built[key], adapter_for(built[key], adapter, local_adapter))

        return cls(role("hypothesis", hypothesis_lm), role("answer", answer_lm), role("judge", judge_lm))

    def endpoint_usage(self) -> dict[str, dict]:
        """Per LM over several endpoints (by spec and the roles it serves): calls, tokens, seconds and failures per
        endpoint, for run.json."""
        out: dict[str, dict] = {}
        pools: dict[int, str] = {}  # one entry per pool: two pools under one model string are two entries
        for name in ROLES:
            role = getattr(self, name)
            usage = endpoint_usage(role.lm)
            if usage is None:
                continue
            if id(role.lm) not in pools:
                key = role.spec if role.spec not in out else f"{role.spec} @ {', '.join(sorted(usage))}"
                pools[id(role.lm)] = key
                out[key] = {"roles": [], "endpoints": usage}
            out[pools[id(role.lm)]]["roles"].append(name)
        return out

    def specs(self) -> dict[str, str]:
        return {name: getattr(self, name).spec for name in ROLES}

    def identities(self) -> dict[str, dict[str, Any]]:
        """What identifies each role's weights (run.json records it; a resume against other weights is refused)."""
        return {name: identity_of(getattr(self, name).lm) for name in ROLES}

    def use_adapters(self, recorded: dict[str, str] | None) -> None:
        """Format prompts as a frozen artifact's compile did: its recorded adapter class per role, or, for an
        artifact from before adapters were recorded, the rule of that time (JSON for local and served models)."""
        choices = {"LeanAdapter": "lean", "JSONAdapter": "json", "ChatAdapter": "chat"}
        for name in ROLES:
            role = getattr(self, name)
            saved = choices.get((recorded or {}).get(name))
            # the rule of that time: JSON for local and served models, ChatAdapter for hosted APIs
            role.adapter = adapter_for(role.lm, saved) if saved else adapter_for(role.lm, "auto", local="json")

    def adapters(self) -> dict[str, str]:
        """Which DSPy adapter formats each role's prompts (it changes every prompt, so runs record it)."""
        return {name: type(getattr(self, name).adapter).__name__ for name in ROLES}
