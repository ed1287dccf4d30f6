"""Whether a run may resume in, or add methods to, a results directory: the program settings two records disagree
on, the earlier methods a run keeps on record, and whether a role's model is still the one the rows were answered
with (the results store refuses what does not match, naming it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hyporag.foundation.errors import HyporagError
from hyporag.foundation.settings import declared_default

# what a run records of the index its methods read: none when they read no passages (cot alone)
RETRIEVAL_KEYS = ("retriever", "index_fingerprint", "bm25_engine", "bm25_search", "index_dir")


def _brief(identity: dict | None) -> str:
    """An identity in a few words: the endpoint and what it serves, a file, or a pinned hash."""
    identity = identity or {}
    parts = [identity.get("endpoint"), identity.get("model_path"), ",".join(identity.get("models") or []) or None,
             ",".join(identity.get("model_files") or []) or None,
             identity.get("path"), (identity.get("sha256") or "")[:12] or None, identity.get("model")]
    return " ".join(str(p) for p in parts if p) or "unknown"


def _other_model(before: dict | None, now: dict | None) -> bool:
    """Whether a role's model now is not the one recorded; a pool none of whose servers answers reports nothing to
    compare (its first call stops the run instead)."""
    def keyed(identity: dict | None) -> dict | None:  # an allowed speculative mode keeps replies (lm.speculative)
        return {k: v for k, v in identity.items() if k != "speculative"} if identity else identity

    return keyed(before) != keyed(now) and not any(_unreported_pool(i) for i in (before, now))


def _unreported_pool(identity: dict | None) -> bool:
    return (identity or {}).get("kind") == "server-pool" and not (identity or {}).get("reported")


def _deciding(settings: dict[str, Any]) -> bool:
    return bool((settings.get("sequential") or {}).get("until_decided"))


def differing_settings(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """The program settings two records disagree on. A setting one record lacks (written before it existed) agrees
    when the other holds its declared default: the older run ran with that behaviour."""
    differing = []
    for key in sorted(before.keys() | now.keys()):
        if key in before and key in now:
            if before[key] != now[key]:
                differing.append(key)
            continue
        if (now if key in now else before)[key] != declared_default(key):
            differing.append(key)
    return differing


def with_earlier_methods(path: Path, previous: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """A run may add methods to a results dir (its earlier methods' rows stay, and stay on record in run.json), but
    a method already there must run with the settings its rows were answered with, or the rows would mix."""
    before, now = previous.get("program") or {}, settings.get("program") or {}
    for method in before.keys() & now.keys():
        fields = differing_settings(before[method], now[method])
        if fields:
            raise HyporagError(f"{path}: this results dir holds {method} rows answered with other settings "
                               f"({', '.join(fields)}); use another --out (rows from different settings must not mix)")
    earlier = [m for m in previous.get("methods") or [] if m not in (settings.get("methods") or [])]
    if not earlier:
        return settings
    merged = {**settings, "methods": [*earlier, *settings.get("methods", [])], "program": {**before, **now}}
    for key in RETRIEVAL_KEYS:  # the index the earlier methods read, when this run's methods read none
        if merged.get(key) is None and previous.get(key) is not None:
            merged[key] = previous[key]
    if "effective" in previous or "effective" in settings:
        merged["effective"] = {**(previous.get("effective") or {}), **(settings.get("effective") or {})}
    return merged
