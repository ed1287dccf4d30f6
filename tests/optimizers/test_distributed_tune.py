"""Two `hyporag tune` workers on one study in a real PostgreSQL, one killed mid-trial: the study ends with exactly
the requested trials, and the dead worker's trial is re-queued once (heartbeats) and finished by the survivor."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import write_jsonl
from tests.postgres import postgres_server

TRIALS = 5


@pytest.fixture
def postgres_url():
    try:
        with postgres_server() as url:
            yield url
    except RuntimeError as exc:
        pytest.skip(f"no PostgreSQL for the distributed-tuning test: {exc}")


def test_two_workers_one_killed_mid_trial(postgres_url, server, tiny_corpus_dir, tmp_path):
    import optuna
    from optuna.trial import TrialState

    server.mode = "delay"  # 0.3 s per LM call: a trial takes a few seconds, so the kill lands inside one
    questions = [{"id": f"q{i}", "question": f"Which cells secrete hormone {i}?",
                  "options": {"A": "Beta cells", "B": "Alpha cells"}, "answer": "A"} for i in range(4)]
    dataset = write_jsonl(tmp_path / "q.jsonl", questions)
    command = [sys.executable, "-m", "hyporag.cli", "tune", "--method", "chr", "--study", "pg", "--trials",
               str(TRIALS), "--dataset", str(dataset), "--val-fraction", "0.5", "--storage", postgres_url,
               "--heartbeat", "1", "--corpus", str(tiny_corpus_dir), "--index-dir", str(tmp_path / "ix"),
               "--budget", "2", "--lm", "openai/test-model", "--api-base", f"http://127.0.0.1:{server.server_port}/v1",
               "--api-key", "k", "--no-cache"]
    env = {**os.environ, "HYPORAG_CACHE_DIR": str(tmp_path / "cache")}
    subprocess.run([*command, "--trials", "0"], env=env, capture_output=True, check=False)  # build the index once
    victim = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    survivor = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def running_trial_of(pid: int):
        study = optuna.load_study(study_name="pg", storage=postgres_url)
        return [t for t in study.get_trials(states=(TrialState.RUNNING,)) if t.user_attrs.get("worker", "")
                .endswith(f":{pid}")]

    deadline = time.time() + 120
    while time.time() < deadline and not running_trial_of(victim.pid):
        time.sleep(0.2)
    killed = running_trial_of(victim.pid)
    assert killed, "the first worker never started a trial"
    time.sleep(0.5)  # mid-trial: some of its questions are answered, the trial is not finished
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    output, _ = survivor.communicate(timeout=300)
    assert survivor.returncode == 0, output

    trials = optuna.load_study(study_name="pg", storage=postgres_url).get_trials()
    states = [t.state for t in trials]
    assert states.count(TrialState.COMPLETE) == TRIALS and states.count(TrialState.RUNNING) == 0
    dead = next(t for t in trials if t.number == killed[0].number)
    assert dead.state == TrialState.FAIL
    retries = [t for t in trials if t.system_attrs.get("failed_trial") == dead.number]
    assert len(retries) == 1 and retries[0].state == TrialState.COMPLETE and retries[0].params == dead.params
    assert "re-queued 1 trial" in output
