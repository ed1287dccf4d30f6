"""Atomic writes: a reader (or a re-run after kill -9) sees the old file or the new one, never half of one."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hyporag.foundation.errors import DiskFullError


def raise_if_disk_full(exc: OSError, path: Path | str) -> None:
    """A full disk (or quota) is its own failure with its own exit status, naming the file being written."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        raise DiskFullError(f"{path}: disk full while writing ({exc.strerror}); free space and re-run the same "
                            "command: finished work is kept") from None


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise_if_disk_full(exc, path)
        raise


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: str | os.PathLike, obj: Any) -> None:
    write_text_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False) + "\n")
