"""Secrets a user puts in URLs: a password in an `--api-base` (a proxy with basic auth) or in the `--track` URI is
sent as basic auth and written nowhere, printed nowhere: searched in every file the run and its MLflow store wrote.
Also what happens when the MLflow server goes away mid-job, and a folder as the `--track` target."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hyporag.cli import main
from hyporag.jobs.tracking import TrackingLost, tracked
from hyporag.testing import fake_openai
from tests.conftest import PASSAGES, write_jsonl

SECRET = "S3cretPW"


def files_holding(root: Path, text: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def project(tmp_path: Path, questions: int = 3) -> list[str]:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": i, "title": t, "contents": c} for i, t, c in PASSAGES])
    dataset = write_jsonl(tmp_path / "q.jsonl", [
        {"id": f"q{i}", "question": f"Which cells secrete hormone {i}?", "options": {"A": "Beta", "B": "Alpha"},
         "answer": "A" if i % 2 else "B"} for i in range(questions)])
    return ["eval", "--dataset", str(dataset), "--corpus", str(corpus), "--methods", "cot,rag", "--budget", "2",
            "--lm", "openai/m", "--api-key", "none"]


@pytest.mark.parametrize("servers", [1, 2])
def test_a_password_in_an_api_base_is_sent_as_basic_auth_and_kept_nowhere(tmp_path, capsys, servers):
    with fake_openai(["m"]) as first, fake_openai(["m"]) as second:
        bases = [s.base(f"alice:{SECRET}") for s in (first, second)[:servers]]
        args = [arg for base in bases for arg in ("--api-base", base)]
        assert main([*project(tmp_path), *args, "--out", str(tmp_path / "run")]) == 0
        calls = [auth for s in (first, second) for path, auth in s.requests if path.endswith("/chat/completions")]
        assert calls and all(auth and auth.startswith("Basic ") for auth in calls)
    printed = capsys.readouterr()
    assert SECRET not in printed.out + printed.err
    assert files_holding(tmp_path / "run", SECRET) == []
    identity = json.loads((tmp_path / "run" / "run.json").read_text())["lm_identities"]["answer"]
    assert identity.get("models") == ["m"]  # the server answered its /models with the credentials too


def test_a_password_in_the_track_uri_is_kept_nowhere(tmp_path, capsys):
    from tests.jobs.test_tracking import mlflow_server

    (tmp_path / "store").mkdir()
    with mlflow_server(tmp_path / "store") as (uri, _), fake_openai(["m"]) as server:
        track = uri.replace("http://", f"http://alice:{SECRET}@")
        done = subprocess.run([sys.executable, "-m", "hyporag.cli", *project(tmp_path), "--api-base", server.base(),
                               "--out", str(tmp_path / "run"), "--track", track], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-1500:]
    assert SECRET not in done.stdout + done.stderr
    assert json.loads((tmp_path / "run" / "mlflow_run.json").read_text())["tracking_uri"] == uri
    assert files_holding(tmp_path / "run", SECRET) == [] and files_holding(tmp_path / "store", SECRET) == []


def test_the_mlflow_server_gone_mid_job_is_one_line_with_its_own_exit_and_the_rows_kept(tmp_path, server):
    from tests.jobs.test_tracking import mlflow_server

    (tmp_path / "store").mkdir()
    with mlflow_server(tmp_path / "store") as (uri, proc), \
            pytest.raises(TrackingLost, match="stopped answering") as lost, \
            tracked(uri, "eval", tmp_path / "run") as tracker:
        os.killpg(proc.pid, signal.SIGKILL)  # the server and its workers
        proc.wait(timeout=30)
        tracker.metrics({"rag.accuracy": 0.5})
    assert lost.value.exit_code == 6 and "\n" not in str(lost.value)
    server.mode = "delay"  # 0.3 s a call: the job is mid-run when the MLflow server goes
    rows = tmp_path / "cli" / "results.jsonl"
    with mlflow_server(tmp_path / "store") as (uri, proc):
        command = [sys.executable, "-m", "hyporag.cli", *project(tmp_path, 6), "--api-base",
                   f"http://127.0.0.1:{server.server_port}/v1", "--out", str(tmp_path / "cli"), "--track", uri]
        run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while not (rows.is_file() and len(rows.read_text().splitlines()) >= 2) and time.time() < deadline:
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)  # gone before the job logs its results
        out, err = run.communicate(timeout=300)
    assert run.returncode == 6, err[-1500:]
    assert "stopped answering" in err.strip().splitlines()[-1] and "Traceback" not in err, err[-3000:]
    assert len(rows.read_text().splitlines()) == 12  # every row finished and kept


def test_a_folder_as_the_track_target_is_a_local_store(tmp_path):
    mlflow = pytest.importorskip("mlflow")
    with fake_openai(["m"]) as server:
        assert main([*project(tmp_path), "--api-base", server.base(), "--out", str(tmp_path / "run"),
                     "--track", str(tmp_path / "mlruns")]) == 0
    assert (tmp_path / "mlruns" / "mlflow.db").is_file()
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("hyporag")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED" and "rag.accuracy" in run.data.metrics
    assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {"results.jsonl", "report.html"}
    assert str(tmp_path / "mlruns") in experiment.artifact_location
