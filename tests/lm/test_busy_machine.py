"""A busy machine is said when the embedded model starts (its threads share the cores and run many times slower),
and the model's one-time assembly shows a progress bar."""

from __future__ import annotations

from hyporag.lm.local_engine import say_if_busy


def test_a_load_above_the_cores_is_said_in_one_line(capsys):
    assert say_if_busy(2, load=11.3, cores=2)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "busy (load average 11.3 on 2 cores)" in err[0] and "HYPORAG_LLAMA_THREADS=1" in err[0]
    assert not say_if_busy(2, load=1.4, cores=2) and capsys.readouterr().err == ""


def test_the_models_assembly_shows_its_progress(tmp_path, capsys):
    import pytest

    from hyporag.foundation.errors import ModelError
    from hyporag.lm.gguf import GGUFModel, _assemble

    parts = [tmp_path / "part1", tmp_path / "part2"]
    for part in parts:
        part.write_bytes(bytes(1 << 20))
    model = GGUFModel("tiny", "Tiny", "MIT", ("p1", "p2"), "0", ("a", "b"), 2 << 20, "0" * 64)
    with pytest.raises(ModelError, match="does not match the pinned"):  # not the pinned bytes: never moved in place
        _assemble(parts, tmp_path / "tiny.gguf", model)
    assert "assembling tiny (once)" in capsys.readouterr().err and not (tmp_path / "tiny.gguf").exists()
