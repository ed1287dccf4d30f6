"""Runs tracked in a real MLflow tracking server on 127.0.0.1 (`mlflow server`, SQLite backend), read back
through MlflowClient: params, metrics, artifacts, status; a killed run resumed is one MLflow run, not two."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from hyporag.foundation.processes import stop_process
from tests.conftest import PASSAGES, sigint_default, write_jsonl

mlflow = pytest.importorskip("mlflow", reason="MLflow is not installed (pip install 'hyporag[mlflow]')")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def mlflow_server(root: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """A real `mlflow server` on 127.0.0.1 with its store and artifacts under `root`: (its URI, its process)."""
    port = free_port()
    log = (root / "server.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--backend-store-uri",
                             f"sqlite:///{root / 'mlflow.db'}", "--artifacts-destination", str(root / "artifacts"),
                             "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while True:
        try:
            if urllib.request.urlopen(f"{uri}/health", timeout=2).status == 200:
                break
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            pytest.fail("mlflow server did not start:\n" + (root / "server.log").read_text()[-2000:])
        time.sleep(0.5)
    try:
        yield uri, proc
    finally:  # SIGTERM, then SIGKILL after the grace: a loaded machine's slow shutdown never fails a passed test
        stop_process(proc, grace=30, group=True)


@pytest.fixture(scope="module")
def tracking_server(tmp_path_factory):
    with mlflow_server(tmp_path_factory.mktemp("mlflow")) as (uri, _):
        yield uri


def eval_command(tmp_path: Path, server, uri: str, out: Path, questions: int = 3) -> list[str]:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": i, "title": t, "contents": c} for i, t, c in PASSAGES])
    dataset = write_jsonl(tmp_path / "q.jsonl", [
        {"id": f"q{i}", "question": f"Which cells secrete hormone {i}?", "options": {"A": "Beta", "B": "Alpha"},
         "answer": "A" if i % 2 else "B"} for i in range(questions)])
    return [sys.executable, "-m", "hyporag.cli", "eval", "--dataset", str(dataset), "--corpus", str(corpus),
            "--methods", "cot,rag", "--budget", "2", "--lm", "openai/m", "--api-base",
            f"http://127.0.0.1:{server.server_port}/v1", "--api-key", "none", "--out", str(out), "--track", uri]


def runs_of(uri: str):
    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("hyporag")
    return client, client.search_runs([experiment.experiment_id]) if experiment else []


def test_an_eval_is_one_mlflow_run_with_params_metrics_and_artifacts(tmp_path, server, tracking_server):
    out = tmp_path / "run"
    done = subprocess.run(eval_command(tmp_path, server, tracking_server, out), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-1500:]
    client, runs = runs_of(tracking_server)
    run = next(r for r in runs if r.info.run_id in (out / "mlflow_run.json").read_text())
    assert run.info.status == "FINISHED"
    params, metrics = run.data.params, run.data.metrics
    assert params["program.rag.protocol"] == "fast" and params["program.rag.budget"] == "2"
    assert params["program.rag.parse"] == "strict" and params["lms.answer"] == "openai/m"
    assert params["index_fingerprint"] and params["code_version"].startswith("0.1.0")
    assert metrics["rag.accuracy"] == pytest.approx(1 / 3)  # "A" always; gold A on q1 only
    assert "cot.ci95_low" in metrics and "rag.ci95_high" in metrics
    assert metrics["rag.calls_per_q"] == 1.0 and "rag.seconds_per_q" in metrics
    names = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"results.jsonl", "summary.md", "report.html", "run.json", "accuracy.png"} <= names
    traces = client.search_traces(locations=[run.info.experiment_id], max_results=50)
    assert traces, "DSPy's calls are traced through mlflow.dspy.autolog"


def test_killed_then_resumed_is_one_run_and_an_interrupt_is_killed(tmp_path, server, tracking_server, sigint_ignored):
    server.mode = "delay"  # 0.3 s a call: time to stop the run half-way
    out = tmp_path / "run"
    command = eval_command(tmp_path, server, tracking_server, out, questions=12)
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=sigint_default)
    rows = out / "results.jsonl"
    deadline = time.time() + 120
    while not (rows.is_file() and len(rows.read_text().splitlines()) >= 4) and time.time() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)  # Ctrl-C: the job stops and the MLflow run ends KILLED
    assert proc.wait(timeout=60) == 130
    run_id = (out / "mlflow_run.json").read_text()
    client, runs = runs_of(tracking_server)
    mine = [r for r in runs if r.info.run_id in run_id]
    assert len(mine) == 1 and mine[0].info.status == "KILLED"
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while len(rows.read_text().splitlines()) < 10 and time.time() < deadline:
        time.sleep(0.2)
    proc.kill()  # kill -9: nothing can close the MLflow run, which stays RUNNING
    proc.wait(timeout=30)
    server.mode = "ok"
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-1500:]
    client, runs = runs_of(tracking_server)
    mine = [r for r in runs if r.info.run_id in run_id]
    assert len(mine) == 1, "a resumed job must continue its MLflow run, not start another"
    assert mine[0].info.status == "FINISHED" and mine[0].data.metrics["rag.accuracy"] > 0
    assert len(runs) == len({r.info.run_id for r in runs})


def test_fit_and_tune_in_process_log_their_runs_and_trials(tmp_path, tracking_server):
    """The library calls track as the commands do: fit with its held-out accuracy and frozen artifact; tune with
    each trial a child run carrying its value."""
    from hyporag import TuneSettings, fit, tune
    from hyporag.lm.client import LMRoles
    from tests.optimizers.test_fit import REPLIES, SharedDummyLM, fit_args

    settings, run = fit_args(tmp_path, run={"track": tracking_server})
    result = fit(settings, run, LMRoles.from_lms(SharedDummyLM(dict(REPLIES))))
    client = mlflow.MlflowClient(tracking_uri=tracking_server)
    fitted = client.get_run(__import__("json").loads((result.out / "mlflow_run.json").read_text())["run_id"])
    assert fitted.info.status == "FINISHED" and fitted.data.tags["hyporag.job"] == "fit"
    assert fitted.data.params["job.method"] == "chr" and fitted.data.params["program.budget"] == "2"
    assert {f"heldout.{m}.accuracy" for m in result.heldout_accuracy} <= set(fitted.data.metrics)
    artifacts = {a.path for a in client.list_artifacts(fitted.info.run_id, "artifact")}
    assert "artifact/manifest.json" in artifacts
    assert "report.md" in {a.path for a in client.list_artifacts(fitted.info.run_id)}

    tuned = tune(TuneSettings(method="chr", trials=2, out=str(tmp_path / "tuned"), study="tracked",
                              storage=str(tmp_path / "study.journal")),
                 run, LMRoles.from_lms(SharedDummyLM(dict(REPLIES))))
    parent = __import__("json").loads((tmp_path / "tuned.mlflow_run.json").read_text())["run_id"]
    children = client.search_runs([fitted.info.experiment_id], f"tags.mlflow.parentRunId = '{parent}'")
    assert sorted(c.data.tags["hyporag.child"] for c in children) == ["trial 0", "trial 1"]
    assert all("value" in c.data.metrics for c in children) and tuned.trials == 2
    assert client.get_run(parent).data.metrics["best_value"] == pytest.approx(tuned.best_value)


def test_track_without_mlflow_says_how_to_install_it(monkeypatch, tmp_path):
    import builtins

    from hyporag.foundation.errors import ConfigError
    from hyporag.jobs.tracking import tracked

    real_import = builtins.__import__
    monkeypatch.setattr(builtins, "__import__", lambda name, *a, **k: (_ for _ in ()).throw(ImportError(name))
                        if name == "mlflow" else real_import(name, *a, **k))
    with pytest.raises(ConfigError, match=r"pip install 'hyporag\[mlflow\]'"), tracked("http://x", "eval", tmp_path):
        pass


def test_an_unreachable_tracking_server_is_one_line_and_exit_3(tmp_path, server):
    out = tmp_path / "run"
    started = time.time()
    done = subprocess.run(eval_command(tmp_path, server, f"http://127.0.0.1:{free_port()}", out),
                          capture_output=True, text=True)
    assert done.returncode == 3, done.stderr[-800:]
    assert "the MLflow tracking server did not answer" in done.stderr and "Traceback" not in done.stderr
    assert time.time() - started < 120 and server.requests == 0  # refused before any LM call
