"""What identifies a model's weights, so that no cached reply, stored row or resumed run answers for another model.

DSPy's cache key leaves out `api_base` and `api_key`, and a name is only an alias: two llama.cpp servers can serve
different GGUFs under one `--alias`, and two files called `model.gguf` in two folders share a stem. The identity is
a GGUF's sha256 (the packaged models are pinned) or its resolved path, size and mtime; for a server, the endpoint
plus what the server reports of itself (`/v1/models` ids, llama.cpp's `/props` model path). `ModelIdentityCache`
adds that identity to every DSPy cache key of an LM built by hyporag.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import threading
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import dspy
from dspy.clients.cache import Cache

_IDENTITIES: dict[tuple[str, str], str] = {}  # (model string, api_base) -> identity digest
_LOCK = threading.Lock()


def digest(record: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def local_identity(path: Path, alias: str | None = None) -> dict[str, Any]:
    """A packaged alias by its pinned sha256 (hashing 1 GB per start would cost seconds); any other file by its
    resolved path, size and modification time (an edited or replaced file is another model)."""
    from hyporag.lm.gguf import MODELS

    if alias in MODELS:
        return {"kind": "gguf", "sha256": MODELS[alias].sha256}
    stat = Path(path).stat()
    return {"kind": "gguf", "path": str(Path(path).resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _get_json(url: str, timeout: float) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (the user's own endpoint)
        return json.loads(response.read())


def server_identity(api_base: str, timeout: float = 3.0) -> dict[str, Any]:
    """The endpoint and the server's report of what it serves; `reported` is False when it says nothing (then the
    endpoint alone tells two servers apart, and a restart with other weights behind one port is not detected)."""
    endpoint = api_base.rstrip("/")
    record: dict[str, Any] = {"kind": "server", "endpoint": endpoint}
    try:
        models = _get_json(f"{endpoint}/models", timeout)
        entries = models.get("data") or models.get("models") or []
        record["models"] = sorted(str(m.get("id") or m.get("name") or m.get("model")) for m in entries
                                  if isinstance(m, dict))
    except Exception:  # noqa: BLE001 (a server that does not list models is still usable)
        pass
    root = endpoint.removesuffix("/v1")
    try:
        props = _get_json(f"{root}/props", timeout)
        path = props.get("model_path") or (props.get("default_generation_settings") or {}).get("model")
        if path:
            record["model_path"] = str(path)
    except Exception:  # noqa: BLE001 (only llama.cpp has /props)
        pass
    record["reported"] = "models" in record or "model_path" in record
    return record


def is_loopback(api_base: str | None) -> bool:
    """A server on this machine (127.0.0.0/8, ::1, localhost): a CPU server whose replies take minutes."""
    if not api_base:
        return False
    host = urllib.parse.urlparse(api_base if "//" in api_base else f"http://{api_base}").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def register(model: str, api_base: str | None, identity: dict[str, Any]) -> None:
    """Key this LM's cache entries on `identity`; the cache consults it for every request of (model, api_base)."""
    with _LOCK:
        _IDENTITIES[(model, (api_base or "").rstrip("/"))] = digest(identity)
    install_identity_cache()


class ModelIdentityCache(Cache):
    """DSPy's cache whose key also holds the identity of the model behind the request (see the module doc)."""

    def cache_key(self, request: dict[str, Any], ignored_args_for_cache_key: list[str] | None = None) -> str:
        nested = request.get("request") if isinstance(request.get("request"), dict) else {}
        model = request.get("model") or nested.get("model")
        base = str(request.get("api_base") or request.get("base_url") or "").rstrip("/")
        identity = _IDENTITIES.get((model, base)) if isinstance(model, str) else None
        if identity is not None:
            request = {**request, "_hyporag_model_identity": identity}
        return super().cache_key(request, ignored_args_for_cache_key)


def install_identity_cache(enable_disk_cache: bool | None = None, enable_memory_cache: bool | None = None,
                           disk_cache_dir: str | None = None) -> None:
    """Make `dspy.cache` a ModelIdentityCache with the current cache's settings (or those given)."""
    current = dspy.cache
    if isinstance(current, ModelIdentityCache) and enable_disk_cache is None:
        return
    disk = current.enable_disk_cache if enable_disk_cache is None else enable_disk_cache
    memory = current.enable_memory_cache if enable_memory_cache is None else enable_memory_cache
    directory = disk_cache_dir or current.disk_cache_dir
    replacement = ModelIdentityCache(enable_disk_cache=disk, enable_memory_cache=memory, disk_cache_dir=directory,
                                     disk_size_limit_bytes=1 << 30, restrict_pickle=True)
    with dspy._cache_lock:
        dspy.cache = replacement
