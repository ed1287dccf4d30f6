"""Reading the JSON manifests of indexes and artifacts: a missing or unreadable one is one clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_json_object(path: Path, error: type[Exception], missing: str, invalid_hint: str = "",
                     what: str = "manifest") -> dict[str, Any]:
    """The JSON object at `path`; raises `error` naming the file when it is absent, not JSON, or not an object."""
    if not path.is_file():
        raise error(f"{path}: {missing}")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{path}: {what} is not valid JSON ({exc}){invalid_hint}") from None
    if not isinstance(value, dict):
        raise error(f"{path}: {what} must be a JSON object{invalid_hint}")
    return value
