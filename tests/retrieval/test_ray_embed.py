"""`hyporag embed --ray` on a real Ray cluster started here (`ray start --head`, two CPUs, on 127.0.0.1): the
vectors equal single-process encoding in corpus order, and an actor killed mid-job is restarted by Ray Data with no
passage lost or duplicated. Skipped, with the reason, where Ray is not installed (`pip install 'hyporag[ray]'`)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from hyporag.foundation.processes import stop_process
from hyporag.jobs.embed import embed
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import EmbedSettings
from hyporag.retrieval.vector_shards import VectorShards
from tests.retrieval.test_embed import whole, write_corpus
from tests.tiny_bert import tiny_bert

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'hyporag[ray]'); the Ray embed test "
                                        "is skipped")
RAY_CLI = Path(sys.executable).with_name("ray")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def cluster():
    """A head node with two CPUs in its own session (its processes are ours alone to stop), its address."""
    if not RAY_CLI.is_file():
        pytest.skip(f"no ray command beside {sys.executable}")
    port = free_port()
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # Ray's socket paths must stay short
    head = subprocess.Popen(
        [str(RAY_CLI), "start", "--head", "--block", f"--port={port}", "--node-ip-address=127.0.0.1", "--num-cpus=2",
         "--num-gpus=0", "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={temp}",
         "--object-store-memory=200000000"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True, env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
    address = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if head.poll() is not None:
            pytest.fail(f"ray start exited {head.returncode}: {head.stdout.read().decode()[-800:]}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.5)
    else:
        pytest.fail("the Ray head did not open its port in 90 s")
    yield address
    if ray.is_initialized():
        ray.shutdown()
    stop_process(head, grace=10, group=True)  # the head and every process it started: its own session
    shutil.rmtree(temp, ignore_errors=True)


def encoder_actors() -> list[int]:
    """Pids of the processes Ray Data runs our encoder in (Ray titles them after the callable class)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"PassageEncoder" in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def test_ray_embedding_equals_one_process_and_survives_a_killed_actor(cluster, tmp_path):
    corpus_dir = tmp_path / "corpus"
    write_corpus(corpus_dir, 1198)
    spec_file = tmp_path / "bert.json"
    model = tiny_bert(tmp_path / "bert", 0, hidden=64, layers=2, max_positions=64)
    spec_file.write_text(json.dumps({"name": "tiny-bert", "query_model": model, "pooling": "mean",
                                     "query_max_length": 64, "passage_max_length": 64}))
    out = tmp_path / "vec"
    settings = EmbedSettings(out=str(out), ray=cluster, concurrency=2, shard_size=100, batch_size=8,
                             max_passage_chars=400)
    run = RunConfig(corpus=str(corpus_dir), embedder=str(spec_file))
    killed: list[int] = []
    written_at_kill: list[int] = []

    def kill_one_actor_mid_job() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            actors = encoder_actors()
            written = len(list(out.glob("shard-*.npy")))
            if actors and written:  # the job is under way
                os.kill(actors[0], signal.SIGKILL)
                killed.append(actors[0])
                written_at_kill.append(written)
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one_actor_mid_job, daemon=True)
    killer.start()
    report = embed(settings, run, progress=False, log=lambda m: None)
    killer.join(5)
    assert killed and written_at_kill[0] < 12, "no actor was killed mid-job; make the job longer"
    assert report.shards_encoded == report.shards == 12 and report.passages == 1200
    vectors, ids = VectorShards(out, {"shard_size": 100}).read_all()
    expected, expected_ids = whole(corpus_dir, str(spec_file), 400)
    assert ids == expected_ids and len(set(ids)) == len(ids) == 1200
    np.testing.assert_allclose(vectors, expected, atol=1e-5)
