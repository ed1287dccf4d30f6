"""An index's files as its manifest records them (size and sha256), and the check every load makes against that
record, with a stamp of (size, mtime) so an unchanged index is not hashed again on every open."""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

from hyporag.foundation.atomic import write_json_atomic
from hyporag.foundation.errors import IndexMismatchError


def _file_record(path: Path) -> dict[str, Any]:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return {"size": path.stat().st_size, "sha256": digest.hexdigest()}


def record_files(directory: Path, parts: list[str]) -> dict[str, dict]:
    files: dict[str, dict] = {}
    for part in parts:
        target = directory / part
        paths = sorted(p for p in target.rglob("*") if p.is_file()) if target.is_dir() else [target]
        for path in paths:
            if "shards" not in path.parts:
                files[str(path.relative_to(directory))] = _file_record(path)
    return files


VERIFIED = ".verified.json"


def _stat_signature(directory: Path, manifest: dict[str, Any]) -> dict[str, list[int]]:
    return {rel: [(directory / rel).stat().st_size, (directory / rel).stat().st_mtime_ns] for rel in manifest["files"]}


def verify_files(directory: Path, manifest: dict[str, Any], checksums: bool = True) -> None:
    """Every file the manifest lists exists with its size and sha256: a truncated, corrupted or swapped file is
    refused. Hashing ~300 MB costs about a second, so a stamp of (size, mtime) per file skips it until a file
    changes."""
    for relative, record in manifest.get("files", {}).items():
        path = directory / relative
        if not path.is_file():
            raise IndexMismatchError(f"{path}: index file missing; rebuild with `hyporag index build`")
        if path.stat().st_size != record["size"]:
            raise IndexMismatchError(f"{path}: size {path.stat().st_size} != {record['size']} in the manifest "
                                     "(truncated or replaced); rebuild the index")
    if not checksums:
        return
    stamp = directory / VERIFIED
    signature = _stat_signature(directory, manifest)
    try:
        if json.loads(stamp.read_text()) == {"manifest": manifest.get("built_at"), "files": signature}:
            return
    except (OSError, json.JSONDecodeError):
        pass
    for relative, record in manifest.get("files", {}).items():
        if _file_record(directory / relative)["sha256"] != record["sha256"]:
            raise IndexMismatchError(f"{directory / relative}: checksum differs from the manifest (corrupted); "
                                     "rebuild the index")
    with contextlib.suppress(OSError):  # a read-only index is still usable; it is just verified every time
        write_json_atomic(stamp, {"manifest": manifest.get("built_at"), "files": signature})
