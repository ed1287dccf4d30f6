"""A real llama.cpp HTTP server on 127.0.0.1, in its own process: the embedded GGUF model behind xllamacpp's
`Server` with `port` and `hostnames` set, as a user would serve it to `--lm openai/<alias> --api-base ...`."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from hyporag.foundation.processes import stop_process

# the tests that check plumbing (serving, pools, resumes, equal answers on both sides) run the 0.5B model: the same
# engine and adapter paths as the default 1.5B at about half its time
SMALL_MODEL = "qwen2.5-coder-0.5b"
ALIAS = "hyporag-served"

SERVE = r"""
import signal, sys
import xllamacpp
path, port, alias, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
params = xllamacpp.CommonParams()
params.model.path = path
params.model_alias = {alias}
params.n_ctx = 8192
params.n_parallel = 1
params.cpuparams.n_threads = threads
params.cpuparams_batch.n_threads = threads
params.warmup = False
params.verbosity = -1
params.port = port
params.hostnames = ["127.0.0.1"]
server = xllamacpp.Server(params)
print("listening", server.listening_address, flush=True)
signal.sigwait({signal.SIGTERM, signal.SIGINT})
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_serving(port: int, timeout: float = 120.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with contextlib.suppress(OSError, ValueError), urllib.request.urlopen(
                f"http://127.0.0.1:{port}/v1/models", timeout=2) as response:
            if json.loads(response.read()).get("data"):
                return
        time.sleep(0.2)
    raise TimeoutError(f"llama.cpp server on 127.0.0.1:{port} did not come up in {timeout:.0f} s")


@contextlib.contextmanager
def llama_server(model_path: Path, port: int | None = None, threads: int | None = None
                 ) -> Iterator[tuple[subprocess.Popen, str]]:
    """Start the server, wait until it answers, yield (process, api_base), and always stop it."""
    port = port or free_port()
    threads = str(threads or max(1, os.cpu_count() or 1))
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(model_path), str(port), ALIAS, threads],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until_serving(port)
        yield proc, f"http://127.0.0.1:{port}/v1"
    finally:
        stop_process(proc, grace=30)
