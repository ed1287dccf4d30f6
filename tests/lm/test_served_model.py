"""The backend swap against a real llama.cpp HTTP server on 127.0.0.1 (the embedded model, served by xllamacpp):
answers, calls and tokens as in-process, a server killed mid-run, and the resumed run. Marked: runs the model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from hyporag.cli import main
from hyporag.lm.gguf import DEFAULT_MODEL, resolve_model_path
from hyporag.testing import ALIAS, SMALL_MODEL, free_port, llama_server
from tests.conftest import SHARED

pytestmark = [pytest.mark.local_lm, pytest.mark.skipif(SHARED is None, reason="needs ../shared/data")]

COMMON = ["--dataset", "mmlu-med-dev", "--limit", "2", "--budget", "2", "--corpus", "openstax", "--max-tokens", "200"]


def rows_of(out):
    return {(r["method"], r["question_id"]): r for r in map(json.loads, (out / "results.jsonl").open())}


def test_served_model_matches_in_process_and_reports_calls_and_tokens(tmp_path):
    index = ["--index-dir", str(tmp_path / "index")]
    with llama_server(resolve_model_path(DEFAULT_MODEL)) as (_, api_base):
        served = tmp_path / "served"
        assert main(["eval", "--methods", "cot,chr", *COMMON, *index, "--out", str(served), "--lm",
                     f"openai/{ALIAS}", "--api-base", api_base, "--api-key", "none", "--no-cache",
                     "--adapter", "lean"]) == 0  # a served model keeps JSONAdapter unless asked: ask for lean
    rows = rows_of(served)
    assert len(rows) == 4
    for (method, _), row in rows.items():
        assert row["error"] is None and not row["parse_failure"] and row["answer"] in "ABCD"
        assert row["calls"] == (1 if method == "cot" else 2)  # one call per step: no adapter retry
        assert row["input_tokens"] > 0 and row["output_tokens"] > 0
    settings = json.loads((served / "run.json").read_text())
    assert settings["adapters"]["answer"] == "LeanAdapter" and settings["context_check"].startswith("8192 tokens")
    assert all(r["processed_tokens"] is not None for r in rows.values())  # llama.cpp reports its prompt cache

    local = tmp_path / "local"
    assert main(["eval", "--methods", "cot", *COMMON, *index, "--out", str(local), "--no-cache"]) == 0
    in_process = rows_of(local)
    assert json.loads((local / "run.json").read_text())["adapters"]["answer"] == "LeanAdapter"  # auto, embedded
    # temperature 0, the same prompts and the same weights: the same letter for every question
    assert {q: r["answer"] for (m, q), r in rows.items() if m == "cot"} == {
        q: r["answer"] for (_, q), r in in_process.items()}
    assert {q: r["input_tokens"] for (m, q), r in rows.items() if m == "cot"} == {
        q: r["input_tokens"] for (_, q), r in in_process.items()}


def test_server_killed_mid_run_exits_3_keeping_rows_and_the_rerun_resumes(tmp_path):
    model, port = resolve_model_path(SMALL_MODEL), free_port()  # a resume's plumbing: the small model
    out = tmp_path / "run"
    command = [sys.executable, "-m", "hyporag.cli", "eval", "--methods", "cot", "--dataset", "mmlu-med-dev",
               "--limit", "6", "--corpus", "openstax", "--index-dir", str(tmp_path / "index"), "--out", str(out),
               "--lm", f"openai/{ALIAS}", "--api-base", f"http://127.0.0.1:{port}/v1", "--api-key", "none",
               "--retries", "0", "--no-cache"]
    env = {**os.environ, "HYPORAG_CACHE_DIR": str(tmp_path / "cache")}
    with llama_server(model, port) as (server, _):
        run = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        rows_file, deadline = out / "results.jsonl", time.time() + 300
        while time.time() < deadline and (not rows_file.exists() or not rows_file.read_text().strip()):
            time.sleep(0.1)
        server.send_signal(signal.SIGKILL)  # the server dies while the run is asking its next question
        _, err = run.communicate(timeout=300)
    assert run.returncode == 3, err
    assert "LM backend" in err.strip().splitlines()[-1]
    kept = [json.loads(line) for line in rows_file.read_text().splitlines()]
    finished = [r for r in kept if not r["error"]]
    assert 1 <= len(finished) < 6
    with llama_server(model, port):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    assert len({r["question_id"] for r in rows if not r["error"]}) == 6
    redone = rows[len(kept):]
    assert {r["question_id"] for r in redone}.isdisjoint({r["question_id"] for r in finished})  # not recomputed


def test_over_long_question_is_refused_before_the_embedded_model_runs(tmp_path, capsys):
    question = "A patient presents with these findings. " + "Serum sodium is low and potassium is high. " * 900
    code = main(["ask", "--question", question, "--option", "A=Addison disease", "--option", "B=Cushing syndrome",
                 "--method", "cot"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0
    assert "--question: cot's answer prompt needs up to" in err and "the model's context is 8192" in err


def test_token_counts_bound_what_llama_cpp_processes(tmp_path):
    """The pre-call check counts with the model's own tokenizer: never below what llama.cpp reports, and close."""
    from hyporag.eval.prompt_fit import PromptFit
    from hyporag.lm.client import LMRoles
    from hyporag.lm.context_window import context_window
    from hyporag.programs import make_program
    from hyporag.questions.datasets import load_benchmark

    roles = LMRoles.from_specs(cache=False)
    program = make_program("cot", roles=roles)
    fit = PromptFit(program, context_window(roles.answer.lm), reply_tokens=0)
    for example in load_benchmark("mmlu-med-dev").examples[:2]:
        counted = fit.needed(example.question, example.options)[1]
        processed = program(question=example.question, options=example.options).cost["input_tokens"]
        assert processed <= counted <= 1.1 * processed + 20


def test_reproduce_through_a_served_model_gives_the_in_process_answers(tmp_path):
    """`hyporag reproduce` end to end on a slice: the same table, served and in-process, at temperature 0 (the 0.5B
    on both sides: the paper protocol's reasoning steps cost the 1.5B seven minutes here)."""
    common = ["reproduce", "hcqr-table1", "--datasets", "mmlu-med", "--methods", "rag,hcqr", "--limit", "1",
              "--budget", "3", "--corpus", "openstax", "--index-dir", str(tmp_path / "index"), "--max-tokens", "600",
              "--no-cache"]
    with llama_server(resolve_model_path(SMALL_MODEL)) as (_, api_base):
        assert main([*common, "--out", str(tmp_path / "served"), "--lm", f"openai/{ALIAS}", "--api-base", api_base,
                     "--api-key", "none"]) == 0
    assert main([*common, "--lm", f"local:{SMALL_MODEL}", "--out", str(tmp_path / "local")]) == 0
    served = rows_of(tmp_path / "served" / "hcqr-table1" / "mmlu-med-paper")
    local = rows_of(tmp_path / "local" / "hcqr-table1" / "mmlu-med-paper")
    assert len(served) == len(local) == 2
    for key, row in local.items():
        assert row["error"] is None and served[key]["error"] is None
        # the same prompts and weights: the same queries, the same passages, the same letter
        assert (served[key]["queries"], served[key]["passage_ids"], served[key]["answer"]) == (
            row["queries"], row["passage_ids"], row["answer"]), key
    table = (tmp_path / "served" / "hcqr-table1" / "table.md").read_text()
    assert f"model: ours hypothesis openai/{ALIAS}" in table and "budget: ours 3; paper 15" in table
    assert "| mmlu-med | paper | hcqr | 1 |" in table and "Chang H." in table
