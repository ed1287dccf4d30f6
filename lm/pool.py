"""One LM over several OpenAI-compatible endpoints of one model (`--api-base` repeated): built, identified, and
refused when its members serve different models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dspy

from hyporag.foundation.errors import ModelError
from hyporag.lm.model_identity import digest, register, server_identity


def routed_lm(spec: str, bases: list[str], api_key: str | None, temperature: float, max_tokens: int, cache: bool,
               timeout: float | None, num_retries: int) -> dspy.LM:
    """One LM over several endpoints of one model; the Router retries on another endpoint, so DSPy does not."""
    from hyporag.lm.router import RoutedEngine  # LiteLLM's Router: imported when a pool is asked for

    engine = RoutedEngine(spec, bases, api_key=api_key, timeout=timeout, num_retries=num_retries)
    servers = [server_identity(base) for base in bases]  # with any credentials: they ask the server too
    refuse_mixed_pool(spec, servers)
    identity = pool_identity(spec, servers)
    # the model name DSPy keys its cache on names this pool (its endpoints and what they serve): two pools under
    # one model string for two roles never answer from each other's cache
    name = f"{spec}@pool-{digest({**identity, 'endpoints': sorted(engine.api_bases)})[:12]}"
    lm = dspy.LM(name, engine=engine, temperature=temperature, max_tokens=max_tokens, cache=cache, num_retries=0)
    lm._hyporag_identity = identity
    lm._hyporag_endpoints = engine.api_bases
    register(lm.model, "", identity)
    return lm


def refuse_mixed_pool(spec: str, servers: list[dict[str, Any]]) -> None:
    """One LM must be one model: endpoints that report different weights under one alias would mix two models'
    answers in one run's rows, so such a pool is refused before any call."""
    def served(server: dict[str, Any]) -> tuple:
        return tuple(server.get("models") or ()), Path(server["model_path"]).name if server.get("model_path") else None

    reporting = [s for s in servers if s.get("reported")]
    kinds = {served(s) for s in reporting}
    if len(kinds) > 1:
        each = "; ".join(f"{s['endpoint']} serves {_served_text(s)}" for s in reporting)
        raise ModelError(f"LM {spec!r}: the endpoints of one pool serve different models ({each}); give one pool "
                         "per model (a role's own --<role>-api-base for another)")


def _served_text(server: dict[str, Any]) -> str:
    parts = [",".join(server.get("models") or []), Path(server["model_path"]).name if server.get("model_path") else ""]
    return " / ".join(p for p in parts if p) or "nothing reported"


def pool_identity(spec: str, servers: list[dict[str, Any]]) -> dict[str, Any]:
    """What the live servers of a pool report serving (endpoints left out: any of them may answer, and a dead one
    reports nothing); `reported` is False when none answers, so a resume then cannot compare and does not refuse."""
    reporting = [s for s in servers if s.get("reported")]
    identity: dict[str, Any] = {"kind": "server-pool", "model": spec, "reported": bool(reporting)}
    if reporting:
        identity["models"] = sorted({m for s in reporting for m in s.get("models") or []})
        identity["model_files"] = sorted({Path(s["model_path"]).name for s in reporting if s.get("model_path")})
    return identity
