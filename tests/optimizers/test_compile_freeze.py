"""Compile with DummyLM, freeze, reload in a fresh process: identical predictions and identical prompts."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from dspy.utils import DummyLM

from hyporag.eval.dspy_metrics import accuracy
from hyporag.foundation.errors import IndexMismatchError
from hyporag.lm.client import LMRoles
from hyporag.optimizers.artifact import ArtifactError, load_artifact, manifest_checksum, save_artifact
from hyporag.optimizers.splits import refuse_test_split, split_train_val
from hyporag.optimizers.teleprompter import compile_program
from hyporag.programs import make_program
from hyporag.retrieval import LambdaSchedule
from tests.conftest import chr_replies, dummy_roles

REPLIES = chr_replies("A")


def chr_roles():
    return dummy_roles(REPLIES)


def compiled_chr(tiny_retriever, tiny_questions, tmp_path):
    program = make_program("chr", retriever=tiny_retriever, roles=chr_roles(), budget=2,
                           schedule=LambdaSchedule("linear", lam_min=0.2, lam_max=0.8))
    result = compile_program(program, tiny_questions[:2], tiny_questions[2:], "bootstrap", accuracy,
                             roles=program.roles, max_demos=2)
    out = save_artifact(tmp_path / "artifact", result.program, tiny_retriever, {"answer": "dummy"},
                        {"validation": {"before": result.before, "after": result.after}})
    return result, out


RUNNER = r"""
import json, sys
import dspy
from dspy.utils import DummyLM
from hyporag.optimizers.artifact import load_artifact
from hyporag.lm.client import LMRoles
from hyporag.retrieval import open_index
from hyporag.questions.records import load_records
dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
artifact, index, questions, replies = sys.argv[1:5]
lm = DummyLM(json.loads(replies))
program = load_artifact(artifact, open_index(index), LMRoles.from_lms(lm))
out = []
for e in load_records(questions).examples:
    p = program(question=e.question, options=e.options)
    out.append({"answer": p.answer, "passages": [x["id"] for x in p.passages]})
print(json.dumps({"predictions": out, "prompts": [h["messages"] for h in lm.history]}))
"""


def test_frozen_program_reproduces_in_a_fresh_process(tiny_retriever, tiny_questions, tmp_path):
    result, out = compiled_chr(tiny_retriever, tiny_questions, tmp_path)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["program_settings"]["schedule"] == "linear" and manifest["program_settings"]["lam_max"] == 0.8
    assert manifest["retrieval"]["index_fingerprint"] == tiny_retriever.fingerprint
    assert manifest["adapters"]["answer"] == "ChatAdapter"  # the reload formats prompts as the compile did
    assert json.loads((out / "program.json").read_text())  # plain JSON, no pickle

    lm = DummyLM(dict(REPLIES))
    here = load_artifact(out, tiny_retriever, LMRoles.from_lms(lm))
    local = [here(question=e.question, options=e.options) for e in tiny_questions]
    local_prompts = [h["messages"] for h in lm.history]
    assert any("Beta cells" in str(m) or "insulin" in str(m) for m in local_prompts[1])  # demos are in the prompt

    proc = subprocess.run([sys.executable, "-c", RUNNER, str(out), str(tiny_retriever.directory),
                           str(tmp_path / "q.jsonl"), json.dumps(REPLIES)], capture_output=True, text=True, check=True)
    fresh = json.loads(proc.stdout.strip().splitlines()[-1])
    assert fresh["predictions"] == [{"answer": p.answer, "passages": [x["id"] for x in p.passages]} for p in local]
    assert fresh["prompts"] == json.loads(json.dumps(local_prompts))


def resign(path: Path, manifest: dict) -> None:
    """Write an edited manifest with a fresh checksum, to reach the checks behind the checksum."""
    path.write_text(json.dumps({**manifest, "manifest_sha256": manifest_checksum(manifest)}))


def test_any_edit_of_the_manifest_is_refused(tiny_retriever, tiny_questions, tmp_path):
    _, out = compiled_chr(tiny_retriever, tiny_questions, tmp_path)
    path = out / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["program_settings"]["budget"] = 5  # a valid value, silently used before the manifest had a checksum
    path.write_text(json.dumps(manifest, indent=2))
    with pytest.raises(ArtifactError, match="differs from its checksum"):
        load_artifact(out, tiny_retriever, chr_roles())


def test_edited_or_mismatched_artifacts_are_refused(tiny_retriever, tiny_questions, tmp_path):
    _, out = compiled_chr(tiny_retriever, tiny_questions, tmp_path)
    manifest_path = out / "manifest.json"
    original = manifest_path.read_text()

    manifest_path.write_text("{broken")
    with pytest.raises(ArtifactError, match="not valid JSON"):
        load_artifact(out, tiny_retriever, chr_roles())

    manifest = json.loads(original)
    del manifest["method"]
    resign(manifest_path, manifest)
    with pytest.raises(ArtifactError, match="field 'method'"):
        load_artifact(out, tiny_retriever, chr_roles())

    manifest = json.loads(original)
    manifest["program_settings"]["per_query_k"] = 3  # not a CHR setting
    resign(manifest_path, manifest)
    with pytest.raises(ArtifactError, match="do not fit 'chr'"):
        load_artifact(out, tiny_retriever, chr_roles())

    manifest = json.loads(original)
    manifest["retrieval"]["index_fingerprint"] = "0" * 64
    resign(manifest_path, manifest)
    with pytest.raises(IndexMismatchError, match="compiled against an index"):
        load_artifact(out, tiny_retriever, chr_roles())

    manifest_path.write_text(original)
    state = json.loads((out / "program.json").read_text())
    (out / "program.json").write_text(json.dumps({**state, "extra": 1}))
    with pytest.raises(ArtifactError, match="checksum differs"):
        load_artifact(out, tiny_retriever, chr_roles())

    manifest_path.unlink()
    with pytest.raises(ArtifactError, match="manifest missing"):
        load_artifact(out, tiny_retriever, chr_roles())


def test_state_that_does_not_fit_the_program_is_refused(tiny_retriever, tiny_questions, tmp_path):
    _, out = compiled_chr(tiny_retriever, tiny_questions, tmp_path)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["method"] = "hcqr"
    from hyporag.programs.config import ProgramConfig

    shared = ProgramConfig.__dataclass_fields__  # drop CHR's own settings: what is left fits HCQR
    manifest["program_settings"] = {k: v for k, v in manifest["program_settings"].items() if k in shared}
    resign(out / "manifest.json", manifest)
    with pytest.raises(ArtifactError, match="does not fit program 'hcqr'"):
        load_artifact(out, tiny_retriever, chr_roles())


def test_splits_are_seeded_disjoint_and_refuse_test_sets(tiny_questions):
    train, val = split_train_val(tiny_questions, 0.34, seed=1)
    assert len(val) == 1 and not {e.id for e in train} & {e.id for e in val}
    assert split_train_val(tiny_questions, 0.34, seed=1)[1][0].id == val[0].id
    from hyporag.foundation.errors import HyporagError

    with pytest.raises(HyporagError, match="test split"):
        refuse_test_split("medqa", allow_test=False)
    refuse_test_split("medqa", allow_test=True)
    refuse_test_split("medqa-dev", allow_test=False)


def test_interrupted_save_leaves_no_partial_artifact(tiny_retriever, tiny_questions, tmp_path, monkeypatch):
    result, out = compiled_chr(tiny_retriever, tiny_questions, tmp_path)
    before = (out / "program.json").read_bytes()

    def interrupted(path, *args, **kwargs):
        Path(path).write_text('{"half": ')
        raise KeyboardInterrupt

    monkeypatch.setattr(result.program, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_artifact(out, result.program, tiny_retriever, {"answer": "dummy"}, {})
    assert (out / "program.json").read_bytes() == before  # the previous artifact is intact
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    with pytest.raises(KeyboardInterrupt):
        save_artifact(tmp_path / "new", result.program, tiny_retriever, {"answer": "dummy"}, {})
    assert not (tmp_path / "new").exists()


def test_compile_meters_validation_and_optimizer_separately(tiny_retriever, tiny_questions, tmp_path):
    result, _ = compiled_chr(tiny_retriever, tiny_questions, tmp_path)
    validation = tiny_questions[2:]
    # CHR makes two calls per question (hypotheses, answer); validation scores the program before and after.
    assert result.cost_by_phase["validation"]["calls"] == 2 * 2 * len(validation)
    assert result.calls == result.cost_by_phase["optimizer"]["calls"] > 0
    assert result.settings["max_metric_calls"] is None


def test_gepa_budget_is_program_runs_not_a_preset():
    from hyporag.optimizers.teleprompter import make_teleprompter

    bounded = make_teleprompter("gepa", accuracy, reflection_lm=DummyLM([{}]), max_metric_calls=12)
    assert bounded.max_metric_calls == 12 and bounded.auto is None
    preset = make_teleprompter("gepa", accuracy, auto="light", reflection_lm=DummyLM([{}]))
    assert preset.auto == "light" and preset.max_metric_calls is None


def test_an_artifact_whose_predictor_carries_its_own_lm_is_refused(tiny_retriever, tiny_questions, tmp_path):
    """A shared artifact must not pick its model (and spend the user's key on it): consistent checksums or not."""
    _, out = compiled_chr(tiny_retriever, tiny_questions, tmp_path)
    state = json.loads((out / "program.json").read_text())
    name = next(k for k, v in state.items() if isinstance(v, dict) and "demos" in v)
    state[name]["lm"] = {"model": "openai/someone-elses-model", "api_base": "http://198.51.100.7/v1"}
    (out / "program.json").write_text(json.dumps(state))
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["program_sha256"] = hashlib.sha256((out / "program.json").read_bytes()).hexdigest()
    manifest["manifest_sha256"] = manifest_checksum(manifest)
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArtifactError, match=f"predictor {name!r} carries its own LM .*someone-elses-model"):
        load_artifact(out, tiny_retriever, chr_roles())


def test_a_frozen_program_refuses_an_index_of_another_bm25_engine(tiny_retriever, tiny_questions, tiny_corpus_dir,
                                                                   tmp_path):
    """The same corpus (same fingerprint) indexed by another engine ranks differently: a frozen program would not
    reproduce its predictions there, so the load is refused, naming the engine to rebuild with."""
    from tests.conftest import _tiny_index

    _, out = compiled_chr(tiny_retriever, tiny_questions, tmp_path)
    assert json.loads((out / "manifest.json").read_text())["retrieval"]["bm25_engine"] == "bm25s"
    other = _tiny_index(tiny_corpus_dir, tmp_path / "index-tantivy", "tantivy")
    assert other.fingerprint == tiny_retriever.fingerprint
    with pytest.raises(IndexMismatchError, match="compiled on a bm25s BM25 index.*--bm25-engine bm25s") as refused:
        load_artifact(out, other, chr_roles())
    assert "\n" not in str(refused.value)
    assert load_artifact(out, tiny_retriever, chr_roles()) is not None


def test_a_frozen_program_refuses_another_bm25_search(tiny_retriever, tiny_questions, tiny_corpus_dir, tmp_path):
    """Compiled on the exact search, reloaded on the two-stage one (same index, other rankings): refused in one line
    naming the flag; the same index searched exactly loads."""
    from hyporag.retrieval import build_index, load_corpus, open_index

    _, out = compiled_chr(tiny_retriever, tiny_questions, tmp_path)
    assert json.loads((out / "manifest.json").read_text())["retrieval"]["bm25_search"] == "exact"
    corpus = load_corpus(str(tiny_corpus_dir))
    build_index(corpus, tiny_retriever.directory, retriever="both", embedder_name="hashing-64", progress=False,
                log=lambda m: None, bm25_search="two-stage")
    two_stage = open_index(tiny_retriever.directory, corpus=corpus, bm25_search="two-stage")
    with pytest.raises(IndexMismatchError, match="compiled with the exact BM25 search.*--bm25-search exact") as refused:
        load_artifact(out, two_stage, chr_roles())
    assert "\n" not in str(refused.value)
    assert load_artifact(out, open_index(tiny_retriever.directory, corpus=corpus), chr_roles()) is not None
