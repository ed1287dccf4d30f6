"""Where hyporag finds its data and keeps its caches.

Resolution order for data: an explicit path, `$HYPORAG_DATA_DIR`, then `../shared/data` beside the repository;
loaders fall back to the Hugging Face hub only when none of these holds the file.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def data_root(explicit: str | os.PathLike | None = None) -> Path | None:
    """The local data directory to read from, or None when only the hub is left."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("HYPORAG_DATA_DIR")
    if env:
        return Path(env)
    shared = REPO_ROOT.parent / "shared" / "data"
    return shared if shared.is_dir() else None


SHAREABLE = ("models", "tokenizers")  # derived from installed packages only: safe to share between caches


def cache_dir(*parts: str) -> Path:
    """A directory under the project cache (`$HYPORAG_CACHE_DIR`, default `~/.cache/hyporag`), created on demand.

    Assembled models and their tokenizers may live elsewhere (`$HYPORAG_MODEL_CACHE_DIR`), so several caches (one
    per test, say) share one 1 GB model file."""
    shared = os.environ.get("HYPORAG_MODEL_CACHE_DIR")
    if shared and parts and parts[0] in SHAREABLE:
        path = Path(shared).joinpath(*parts)
        path.mkdir(parents=True, exist_ok=True)
        return path
    root = Path(os.environ.get("HYPORAG_CACHE_DIR") or Path.home() / ".cache" / "hyporag")
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
