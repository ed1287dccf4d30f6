"""GGUF handling: header reading, sha256-verified assembly from parts, clear errors for missing or bad parts."""

from __future__ import annotations

import hashlib
import struct
from dataclasses import replace

import pytest

from hyporag.foundation.errors import ModelError
from hyporag.lm import gguf


@pytest.fixture(autouse=True)
def own_model_cache(monkeypatch):
    """These tests assemble fake models: they must not share the session's model cache."""
    monkeypatch.delenv("HYPORAG_MODEL_CACHE_DIR")


def fake_gguf(name: str, padding: bytes = b"") -> bytes:
    def string(s: str) -> bytes:
        data = s.encode()
        return struct.pack("<Q", len(data)) + data

    kvs = [
        string("general.architecture") + struct.pack("<I", 8) + string("qwen2"),
        string("tokenizer.ggml.scores") + struct.pack("<I", 9) + struct.pack("<IQ", 6, 3) + struct.pack("<3f", 1, 2, 3),
        string("general.name") + struct.pack("<I", 8) + string(name),
    ]
    return b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs) + padding


def test_header_name_is_read_past_arrays(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(fake_gguf("Tiny Test Model"))
    assert gguf.read_gguf_name(path) == "Tiny Test Model"
    assert gguf.resolve_model_path(str(path)) == path


def test_not_gguf_is_refused(tmp_path):
    path = tmp_path / "x.gguf"
    path.write_bytes(b"nope" * 10)
    with pytest.raises(ModelError, match="not a readable GGUF"):
        gguf.resolve_model_path(str(path))


@pytest.fixture
def parted_model(tmp_path, monkeypatch):
    blob = fake_gguf("Parted", padding=b"x" * 100)
    cut = len(blob) // 2
    dirs = {}
    for i, chunk in enumerate((blob[:cut], blob[cut:]), start=1):
        package = tmp_path / f"pkg{i}"
        (package / "data").mkdir(parents=True)
        (package / "data" / f"part{i:02d}.bin").write_bytes(chunk)
        dirs[f"fake-part{i}"] = package
    model = replace(gguf.MODELS["qwen2.5-coder-0.5b"], alias="tiny", packages=("fake-part1", "fake-part2"),
                    relative_paths=("data/part01.bin", "data/part02.bin"), size=len(blob),
                    sha256=hashlib.sha256(blob).hexdigest())
    monkeypatch.setitem(gguf.MODELS, "tiny", model)
    monkeypatch.setattr(gguf, "_package_dir", lambda name: dirs.get(name))
    return model, dirs


def test_parts_assemble_once_and_verify(parted_model):
    model, _ = parted_model
    path = gguf.resolve_model_path("tiny")
    assert path.stat().st_size == model.size and gguf.read_gguf_name(path) == "Parted"
    mtime = path.stat().st_mtime_ns
    assert gguf.resolve_model_path("tiny").stat().st_mtime_ns == mtime  # reused, not reassembled


def test_tampered_part_fails_checksum_and_leaves_nothing(parted_model):
    model, dirs = parted_model
    part = dirs["fake-part2"] / "data" / "part02.bin"
    part.write_bytes(part.read_bytes()[:-1] + b"y")
    with pytest.raises(ModelError, match="does not match the pinned"):
        gguf.resolve_model_path("tiny")
    assert not list((gguf.cache_dir("models")).glob("tiny*"))


def test_missing_part_names_the_install_command(parted_model, monkeypatch):
    monkeypatch.setattr(gguf, "_package_dir", lambda name: None)
    with pytest.raises(ModelError, match="needs package fake-part1==0.9.0: pip install"):
        gguf.resolve_model_path("tiny")


def test_unknown_alias():
    with pytest.raises(ModelError, match="unknown local model"):
        gguf.resolve_model_path("no-such-model")
