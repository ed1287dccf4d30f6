"""The Hugging Face hub, behind the local data: one loader that turns every failure into one clear line.

Nothing here runs unless a dataset or corpus has no local copy; a user with a hub gets it, a machine without one
gets a message naming the local alternative.
"""

from __future__ import annotations

from typing import Any

from hyporag.foundation.errors import DataError


def hub_load(*args: Any, **kwargs: Any):
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - datasets is a declared dependency
        raise DataError("the 'datasets' package is needed to load from the Hugging Face hub") from exc
    try:
        return datasets.load_dataset(*args, **kwargs)
    except Exception as exc:  # network, auth, or a missing dataset: one line for the user
        raise DataError(
            f"could not load {args[0]!r} from the Hugging Face hub ({type(exc).__name__}: {str(exc)[:160]}); "
            "set HYPORAG_DATA_DIR or pass --data-dir to use a local copy"
        ) from None
