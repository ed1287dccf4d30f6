"""LM backend faults against a loopback HTTP server: rate limits, time-outs, refused connections, empty replies."""

from __future__ import annotations

import json

import pytest

from hyporag.cli import main
from hyporag.foundation.errors import BackendError, RunFailedError
from hyporag.jobs.evaluate import run_evaluation
from hyporag.lm.client import LMRoles, build_lm
from hyporag.programs import make_program


def lm_for(server, **kwargs):
    return build_lm("openai/test-model", api_base=f"http://127.0.0.1:{server.server_port}/v1", api_key="k",
                    cache=False, **kwargs)


def evaluate(lm, questions, tmp_path):
    program = make_program("cot", roles=LMRoles.from_lms(lm))
    return run_evaluation({"cot": program}, questions, tmp_path / "run", {"dataset": "t"}, progress=False)


def test_working_server_answers(server, tiny_questions, tmp_path):
    report = evaluate(lm_for(server), tiny_questions, tmp_path)
    assert report["methods"][0]["n"] == 3 and report["methods"][0]["errors"] == 0


def test_rate_limit_is_retried_then_recorded_and_redone_later(server, tiny_questions, tmp_path):
    server.mode = "429"
    with pytest.raises(RunFailedError, match="every question of cot errored .*rate limited"):
        evaluate(lm_for(server, num_retries=1), tiny_questions, tmp_path)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())  # the rows and report are kept
    assert summary["methods"][0]["errors"] == 3 and server.requests >= 6  # each question retried once
    server.mode = "ok"
    report = evaluate(lm_for(server), tiny_questions, tmp_path)
    assert report["methods"][0]["errors"] == 0 and report["methods"][0]["n"] == 3


def test_empty_completion_is_a_parse_failure(server, tiny_questions, tmp_path):
    server.mode = "empty"
    summary = evaluate(lm_for(server, num_retries=0), tiny_questions, tmp_path)["methods"][0]
    assert summary["parse_failures"] == 3 and summary["accuracy"] == 0.0 and summary["errors"] == 0


def test_timeout_stops_the_run_with_a_backend_error(server, tiny_questions, tmp_path):
    server.mode = "slow"
    with pytest.raises(BackendError, match="did not answer within 0.5 s"):
        evaluate(lm_for(server, num_retries=0, timeout=0.5), tiny_questions, tmp_path)


def test_unreachable_endpoint_is_named_in_one_line(capsys):
    code = main(["ask", "--question", "Q?", "--option", "A=x", "--option", "B=y", "--method", "cot",
                 "--lm", "openai/test-model", "--api-base", "http://127.0.0.1:9/v1", "--api-key", "k",
                 "--retries", "0", "--no-cache"])
    err = capsys.readouterr().err.strip()
    assert code == 3 and "127.0.0.1:9" in err and err.count("\n") == 0


def test_remote_lms_have_a_default_timeout_per_call_sized_by_endpoint():
    from hyporag.lm.client import DEFAULT_TIMEOUT, LOOPBACK_TIMEOUT

    # a CPU server on this machine (a paper-protocol prompt takes ~1 min idle) waits longer than a hosted API
    for base in ("http://127.0.0.1:9/v1", "http://localhost:9/v1", "http://[::1]:9/v1", "http://127.0.0.2:9"):
        assert build_lm("openai/test-model", api_base=base, api_key="k").kwargs["timeout"] == LOOPBACK_TIMEOUT == 600
    assert build_lm("openai/test-model", api_key="k").kwargs["timeout"] == DEFAULT_TIMEOUT == 120.0
    assert build_lm("openai/test-model", api_key="k", timeout=7).kwargs["timeout"] == 7


def test_stalled_server_message_names_the_flag_to_raise(server, capsys):
    server.mode = "slow"
    code = main(["ask", "--question", "Q?", "--option", "A=x", "--option", "B=y", "--method", "cot",
                 "--lm", "openai/test-model", "--api-base", f"http://127.0.0.1:{server.server_port}/v1",
                 "--api-key", "k", "--retries", "0", "--timeout", "0.5", "--no-cache"])
    err = capsys.readouterr().err.strip()
    assert code == 3 and err.count("\n") == 0
    assert "did not answer within 0.5 s; raise --timeout" in err and "Timeouts(read" not in err


def test_no_model_metadata_warning_against_a_server(server, tiny_questions, tmp_path):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    proc = subprocess.run([sys.executable, "-m", "hyporag.cli", "eval", "--dataset", str(tmp_path / "q.jsonl"),
                           "--methods", "cot", "--lm", "openai/test-model", "--api-key", "k", "--no-cache",
                           "--api-base", f"http://127.0.0.1:{server.server_port}/v1", "--out", str(tmp_path / "r")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "metadata refresh failed" not in proc.stderr.lower()
