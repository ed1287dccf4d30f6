"""A program frozen under the paper protocol runs as frozen: `eval --program` and `ask --program` build the
embedded engine uncapped with the artifact's adapter, and answer as the process that froze it. Marked: runs a
real model (SmolLM2-135M, the smallest packaged one, on two questions)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hyporag.lm.engine_rules import engine_kwargs
from tests.conftest import SHARED, write_jsonl

pytestmark = [pytest.mark.local_lm, pytest.mark.skipif(SHARED is None, reason="needs ../shared/data")]

SPEC, TOKENS = "local:smollm2-135m", 160


def test_a_paper_program_runs_uncapped_and_answers_as_frozen(tmp_path):
    from hyporag.jobs.evaluate import run_evaluation
    from hyporag.lm.client import LMRoles
    from hyporag.optimizers.artifact import save_artifact
    from hyporag.programs import make_program
    from hyporag.programs.protocol import PAPER
    from hyporag.questions.datasets import load_benchmark
    from hyporag.retrieval import build_index, load_corpus, open_index

    picked = load_benchmark("mmlu-med-dev").examples[:2]
    dataset = write_jsonl(tmp_path / "q.jsonl", [{"id": e.id, "question": e.question, "options": e.options,
                                                  "answer": e.answer} for e in picked])
    corpus = load_corpus("openstax")
    retriever = open_index(build_index(corpus, tmp_path / "index", retriever="bm25", progress=False), corpus=corpus)
    roles = LMRoles.from_specs(SPEC, **engine_kwargs(PAPER.name),
                               max_tokens=TOKENS, cache=False)
    program = make_program("rag", retriever=retriever, roles=roles, budget=2, protocol=PAPER.name)
    from hyporag.questions.records import load_records

    questions = load_records(dataset).examples
    run_evaluation({"rag": program}, questions, tmp_path / "frozen-run", {"dataset": "q"}, progress=False)
    rows = (tmp_path / "frozen-run" / "results.jsonl").read_text().splitlines()
    frozen = {r["question_id"]: r["answer"] for r in map(json.loads, rows)}
    artifact = save_artifact(tmp_path / "artifact", program, retriever, roles.specs(), {})
    manifest = json.loads((artifact / "manifest.json").read_text())
    assert manifest["protocol"]["caps_engine_output"] is False
    assert manifest["lm_identities"]["answer"]["capped"] is False

    # each command in a fresh process, as a user runs it: llama.cpp's prompt cache reused within one process can
    # move a near-tie's argmax, so the comparison is fresh prefill against fresh prefill
    def hyporag(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "hyporag.cli", *argv, "--lm", SPEC, "--max-tokens", str(TOKENS),
                               "--no-cache"], capture_output=True, text=True, timeout=600)

    out = tmp_path / "eval"
    done = hyporag("eval", "--program", str(artifact), "--dataset", str(dataset), "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    settings = json.loads((out / "run.json").read_text())
    assert settings["lm_identities"]["answer"]["capped"] is False  # the engine as frozen, not the fast cap
    assert settings["adapters"]["answer"] == "JSONAdapter"
    evaluated = {r["question_id"]: r["answer"] for r in map(json.loads, (out / "results.jsonl").open())}
    assert evaluated == frozen
    first = questions[0]
    argv = ["ask", "--program", str(artifact), "--question", first.question, "--json"]
    for letter, text in first.options.items():
        argv += ["--option", f"{letter}={text}"]
    asked = hyporag(*argv)
    assert asked.returncode == 0, asked.stderr[-2000:]
    assert json.loads(asked.stdout)["answer"] == frozen[first.id]
