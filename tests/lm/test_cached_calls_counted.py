"""A reply served from DSPy's cache is still one of the question's calls: a question half-answered before a kill
and finished from the cache on resume costs what an uninterrupted one does, marked as served from the cache."""

from __future__ import annotations

import json

import dspy

import hyporag
from hyporag.jobs.run_config import RunConfig
from hyporag.testing import fake_openai
from tests.conftest import QUESTIONS

REPLY = {"answer": "A", "target_hypothesis": "Beta cells secrete insulin.", "mimic_hypothesis": "Alpha cells."}


def evaluate(base: str, corpus, out):
    return hyporag.evaluate(RunConfig(methods="chr", out=str(out), lm="openai/m", api_base=base, api_key="k",
                                      corpus=str(corpus), program_settings={"budget": 2}),
                            examples=QUESTIONS, progress=False)


def test_a_question_resumed_from_the_cache_counts_every_call(tiny_corpus_dir, tmp_path):
    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=False, disk_cache_dir=str(tmp_path / "c"))
    with fake_openai(["m"], reply=REPLY) as server:
        first = evaluate(server.base(), tiny_corpus_dir, tmp_path / "run").summary("chr")
        paid = server.completions
        rows = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
        # killed after its LM calls, before its row was written: the resume serves them from the cache
        (tmp_path / "run" / "results.jsonl").write_text("\n".join(rows[:-1]) + "\n")
        resumed = evaluate(server.base(), tiny_corpus_dir, tmp_path / "run").summary("chr")
        assert server.completions == paid  # nothing paid again
    assert first["calls_per_q"] == resumed["calls_per_q"] == 2.0
    assert first["cache_hits"] == 0 and resumed["cache_hits"] == 2
    last = json.loads((tmp_path / "run" / "results.jsonl").read_text().splitlines()[-1])
    assert last["calls"] == 2 and last["cache_hits"] == 2 and last["input_tokens"] == 10  # its original tokens
