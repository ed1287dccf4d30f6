"""The LM cache and a resumed run answer only for the model that produced them: two real llama.cpp servers serving
different GGUFs under one alias, and two files both called model.gguf in-process. Marked: runs real models."""

from __future__ import annotations

import json

import pytest

from hyporag.cli import main
from hyporag.lm.gguf import resolve_model_path
from hyporag.testing import ALIAS, llama_server
from tests.conftest import SHARED

pytestmark = [pytest.mark.local_lm, pytest.mark.skipif(SHARED is None, reason="needs ../shared/data")]

COMMON = ["--dataset", "mmlu-med-dev", "--limit", "2", "--methods", "cot", "--max-tokens", "120"]


def rows_of(out) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_two_servers_under_one_alias_never_share_cached_replies_or_a_run(tmp_path, capsys):
    small, other = resolve_model_path("smollm2-135m"), resolve_model_path("qwen2.5-coder-0.5b")
    with llama_server(other) as (_, base_a), llama_server(small) as (_, base_b):
        def run(base, out):
            return main(["eval", *COMMON, "--lm", f"openai/{ALIAS}", "--api-base", base, "--api-key", "none",
                         "--adapter", "lean", "--out", str(tmp_path / out)])

        assert run(base_a, "a") == 0
        assert all(r["calls"] > r["cache_hits"] for r in rows_of(tmp_path / "a"))
        assert run(base_b, "b") == 0  # same alias, same prompts, same cache dir: another model, so it is called
        assert all(r["calls"] > r["cache_hits"] for r in rows_of(tmp_path / "b"))
        assert run(base_b, "b-again") == 0  # and the cache still serves the same model
        assert all(r["calls"] >= 1 and r["cache_hits"] == r["calls"] for r in rows_of(tmp_path / "b-again"))
        assert [r["answer"] for r in rows_of(tmp_path / "b-again")] == [r["answer"] for r in rows_of(tmp_path / "b")]
        identities = json.loads((tmp_path / "b" / "run.json").read_text())["lm_identities"]["answer"]
        assert identities["endpoint"] == base_b and identities["model_path"].endswith(small.name)
        capsys.readouterr()
        assert run(base_b, "a") == 2  # resuming server A's run on server B is refused in one line
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "the answer model is not the one this run used" in err and base_a in err


def test_two_files_called_model_gguf_are_two_models_in_process(tmp_path):
    for folder, alias in (("a", "qwen2.5-coder-0.5b"), ("b", "smollm2-135m")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "model.gguf").symlink_to(resolve_model_path(alias))

    def run(folder, out):
        model = tmp_path / folder / "model.gguf"
        return main(["eval", *COMMON, "--lm", f"local:{model}", "--out", str(tmp_path / out)])

    assert run("a", "a") == 0 and all(r["calls"] > r["cache_hits"] for r in rows_of(tmp_path / "a"))
    assert run("b", "b") == 0 and all(r["calls"] > r["cache_hits"] for r in rows_of(tmp_path / "b"))
    assert run("b", "b2") == 0 and all(r["cache_hits"] == r["calls"] >= 1 for r in rows_of(tmp_path / "b2"))
    paths = {json.loads((tmp_path / d / "run.json").read_text())["lm_identities"]["answer"]["path"] for d in "ab"}
    assert len(paths) == 2
