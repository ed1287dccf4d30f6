"""What identifies a model's weights, so that no cached reply, stored row or resumed run answers for another model.

DSPy's cache key leaves out `api_base` and `api_key`, and a name is only an alias: two llama.cpp servers can serve
different GGUFs under one `--alias`, and two files called `model.gguf` in two folders share a stem. The identity is
a GGUF's sha256 (the packaged models are pinned) or its resolved path, size and mtime; for a server, the endpoint
plus what the server reports of itself (`/v1/models` ids, llama.cpp's `/props` model path). `ModelIdentityCache`
adds that identity to every DSPy cache key of an LM built by hyporag.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dspy
from dspy.clients.cache import Cache

from hyporag.foundation.redact import basic_auth, split_userinfo
from hyporag.lm.cost import note_cache_hit
from hyporag.lm.gguf import MODELS

_IDENTITIES: dict[tuple[str, str], str] = {}  # (model string, api_base) -> identity digest
_LOCK = threading.RLock()


def digest(record: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def local_identity(path: Path, alias: str | None = None) -> dict[str, Any]:
    """A packaged alias by its pinned sha256 (hashing 1 GB per start would cost seconds); any other file by its
    resolved path, size and modification time (an edited or replaced file is another model)."""

    if alias in MODELS:
        return {"kind": "gguf", "sha256": MODELS[alias].sha256}
    stat = Path(path).stat()
    return {"kind": "gguf", "path": str(Path(path).resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _get_json(url: str, timeout: float, credentials: tuple[str, str] | None = None) -> Any:
    request = urllib.request.Request(url)
    if credentials:
        request.add_header("Authorization", basic_auth(*credentials))
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (the user's own endpoint)
        return json.loads(response.read())


def server_identity(api_base: str, timeout: float = 3.0) -> dict[str, Any]:
    """The endpoint and the server's report of what it serves; `reported` is False when it says nothing (then the
    endpoint alone tells two servers apart, and a restart with other weights behind one port is not detected)."""
    endpoint, credentials = split_userinfo(api_base.rstrip("/"))
    record: dict[str, Any] = {"kind": "server", "endpoint": endpoint}  # never the password a URL may carry
    try:
        models = _get_json(f"{endpoint}/models", timeout, credentials)
        entries = models.get("data") or models.get("models") or []
        record["models"] = sorted(str(m.get("id") or m.get("name") or m.get("model")) for m in entries
                                  if isinstance(m, dict))
    except Exception:  # noqa: BLE001 (a server that does not list models is still usable)
        pass
    root = endpoint.removesuffix("/v1")
    try:
        props = _get_json(f"{root}/props", timeout, credentials)
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
    """Key this LM's cache entries on `identity`; hyporag's cache consults it for every request of (model,
    api_base), and only such requests reach hyporag's cache (see `identity_cache_scope`)."""
    with _LOCK:
        _IDENTITIES[(model, (api_base or "").rstrip("/"))] = digest(identity)


def _identity_of_request(request: dict[str, Any]) -> str | None:
    nested = request.get("request") if isinstance(request.get("request"), dict) else {}
    model = request.get("model") or nested.get("model")
    base = str(request.get("api_base") or request.get("base_url") or "").rstrip("/")
    return _IDENTITIES.get((model, base)) if isinstance(model, str) else None


class ModelIdentityCache(Cache):
    """DSPy's cache whose key also holds the identity of the model behind the request (see the module doc)."""

    def cache_key(self, request: dict[str, Any], ignored_args_for_cache_key: list[str] | None = None) -> str:
        identity = _identity_of_request(request)
        if identity is not None:
            request = {**request, "_hyporag_model_identity": identity}
        return super().cache_key(request, ignored_args_for_cache_key)


class RoutingCache:
    """`dspy.cache` while hyporag's LMs are calling: their requests go to hyporag's identity-keyed cache, every
    other request to the cache that was there before, untouched, so a user's own DSPy calls made meanwhile (another
    thread, a callback) are cached exactly as if hyporag were not running."""

    def __init__(self, ours: Cache, theirs: Any):
        self.ours, self.theirs = ours, theirs

    def _pick(self, request: Any) -> Any:
        return self.ours if isinstance(request, dict) and _identity_of_request(request) is not None else self.theirs

    def cache_key(self, request: dict[str, Any], ignored_args_for_cache_key: list[str] | None = None) -> str:
        return self._pick(request).cache_key(request, ignored_args_for_cache_key)

    def get(self, request: dict[str, Any], ignored_args_for_cache_key: list[str] | None = None) -> Any:
        found = self._pick(request).get(request, ignored_args_for_cache_key)
        if found is not None:  # served from the cache: still one of the question's calls (hyporag.lm.cost)
            note_cache_hit(found)
        return found

    def put(self, request: dict[str, Any], value: Any, *args: Any, **kwargs: Any) -> None:
        return self._pick(request).put(request, value, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # anything else (reset_memory_cache, settings) is the user's cache's
        return getattr(self.theirs, name)


_OURS: dict[str, Cache] = {}  # "cache": hyporag's cache, as configure_cache set it (default: the user's settings)
_SCOPE: dict[str, Any] = {"depth": 0, "saved": None, "router": None}


def configure_identity_cache(enable_disk_cache: bool, enable_memory_cache: bool, disk_cache_dir: str) -> None:
    """Hyporag's own cache: used only for requests of LMs hyporag built and registered, never made `dspy.cache`."""
    with _LOCK:
        _OURS["cache"] = _identity_cache(enable_disk_cache, enable_memory_cache, disk_cache_dir)


def _identity_cache(disk: bool, memory: bool, directory: str | None) -> ModelIdentityCache:
    return ModelIdentityCache(enable_disk_cache=disk, enable_memory_cache=memory, disk_cache_dir=directory,
                              disk_size_limit_bytes=1 << 30, restrict_pickle=True)


def reset_identity_cache() -> None:
    """Forget `configure_identity_cache` (tests; a notebook that wants DSPy's own settings followed again)."""
    with _LOCK:
        _OURS.clear()


def _our_cache(current: Any) -> Cache:
    """The configured cache, or, never configured, one with the settings of the cache DSPy has now (rebuilt when
    the user replaces theirs)."""
    inner = getattr(current, "theirs", current)
    with _LOCK:
        if "cache" in _OURS:
            return _OURS["cache"]
        mirror = _OURS.get("mirror")
        if mirror is None or mirror[0] is not inner:
            cache = _identity_cache(bool(inner.enable_disk_cache), bool(inner.enable_memory_cache),
                                    inner.disk_cache_dir)
            _OURS["mirror"] = (inner, cache)
        return _OURS["mirror"][1]


@contextlib.contextmanager
def identity_cache_scope() -> Iterator[None]:
    """While any hyporag LM call is under way (any thread), `dspy.cache` routes hyporag's requests to hyporag's
    cache; when the last one ends, `dspy.cache` is again the very object it was (unless the user replaced it)."""
    current = dspy.cache  # built lazily by DSPy: read outside our lock
    ours = _our_cache(current)
    with _LOCK:
        if _SCOPE["depth"] == 0:
            _SCOPE["saved"] = dspy.cache
            _SCOPE["router"] = RoutingCache(ours, _SCOPE["saved"])
            with dspy._cache_lock:
                dspy.cache = _SCOPE["router"]
        _SCOPE["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _SCOPE["depth"] -= 1
            if _SCOPE["depth"] == 0:
                with dspy._cache_lock:
                    if dspy.cache is _SCOPE["router"]:
                        dspy.cache = _SCOPE["saved"]
                _SCOPE["saved"] = _SCOPE["router"] = None
