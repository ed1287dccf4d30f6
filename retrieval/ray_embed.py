"""Passage embedding on a Ray cluster: Ray Data `map_batches` with the encoder as a callable class (one model load
per actor, `num_gpus` per actor where the cluster has GPUs), results gathered by the driver into shards.

Passages travel to the actors through Ray's object store, so the workers need hyporag installed but not the corpus
or the output folder; the driver writes each shard the moment its last vector arrives, so a job cut short keeps its
finished shards. A killed actor is restarted by Ray Data and its batches retried; every vector is placed by its row
number, so a retried batch can neither duplicate nor drop a passage, and a shard is written only when every row
arrived exactly once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from hyporag.foundation.errors import ConfigError, HyporagError
from hyporag.retrieval.encoders import EncoderSpec, make_encoder
from hyporag.retrieval.vector_shards import PendingShard

INSTALL_HINT = "pip install 'hyporag[ray]' (Ray Data; the same version on every node of the cluster)"


def import_ray():
    """Ray and Ray Data, or one line saying how to install them."""
    try:
        import ray
        import ray.data  # noqa: F401  (Ray Data is the `ray[data]` extra's part)
    except ImportError:
        raise ConfigError(f"hyporag embed --ray needs Ray: {INSTALL_HINT}") from None
    return ray


class PassageEncoder:
    """The callable class Ray Data runs in each actor: loads the encoder once, then encodes batches of rows."""

    def __init__(self, spec: dict[str, Any], batch_size: int, threads: int | None):
        if threads:
            import torch

            torch.set_num_threads(threads)
        self.encoder = make_encoder(EncoderSpec.from_dict(spec, "the job's encoder spec"))
        self.batch_size = batch_size

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        pairs = list(zip((str(t) for t in batch["title"]), (str(c) for c in batch["contents"]), strict=True))
        vectors = self.encoder.encode_passages(pairs, batch_size=self.batch_size)
        return {"row": np.asarray(batch["row"], dtype=np.int64), "vector": vectors}


CONNECT_SECONDS = 10.0


def reachable(address: str, seconds: float = CONNECT_SECONDS) -> None:
    """Refuse in one line, within `seconds`, an address nothing answers at: Ray's own join retries for many minutes
    (and a CI job with a wrong address would hang until killed by hand)."""
    if address == "auto" or "://" not in address and ":" not in address:
        return  # Ray finds a local cluster itself (RAY_ADDRESS, or the head started on this machine)
    parts = urllib.parse.urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if not host or not port:
        raise HyporagError(f"--ray {address}: not an address (give host:port, ray://host:10001, or auto)")
    try:
        socket.create_connection((host, port), timeout=seconds).close()
    except OSError as exc:
        raise HyporagError(f"--ray {address}: nothing answers there within {seconds:g} s ({exc.strerror or exc}); "
                           "is `ray start --head` running there?") from None


JOIN_SECONDS = 60.0


def _join_bounded(ray, address: str) -> BaseException | None:
    """ray.init in a helper thread, waited for here: Ray's join blocks in C++ for many minutes where nothing answers
    as a Ray cluster, and a signal cannot reach Python meanwhile. Returns its exception, or TimeoutError. SIGTERM
    while waiting ends the process at once with one line (a CI job with a wrong address stops when told to)."""
    outcome: dict[str, BaseException | None] = {}

    def join() -> None:
        try:
            ray.init(address=address, log_to_driver=False, logging_level="ERROR")
            outcome["error"] = None
        except BaseException as exc:  # noqa: BLE001 (handed to the caller, which says what it means)
            outcome["error"] = exc

    thread = threading.Thread(target=join, name="hyporag-ray-join", daemon=True)
    thread.start()
    deadline = time.monotonic() + JOIN_SECONDS
    while thread.is_alive() and time.monotonic() < deadline:
        thread.join(0.2)
    return outcome["error"] if "error" in outcome else TimeoutError()


@contextlib.contextmanager
def stopped_by_sigterm() -> Iterator[None]:
    """SIGTERM ends the process with one line while Ray is imported and joined (from the main thread): its join
    blocks in C++, and its import alone takes seconds on a loaded machine, so the handler is in place before both."""
    on_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _stop_joining) if on_main else None
    try:
        yield
    finally:
        if on_main:
            signal.signal(signal.SIGTERM, previous)


def _stop_joining(signum: int, frame) -> None:
    print("hyporag: embed: stopped (SIGTERM) while joining the Ray cluster; no shard was written", file=sys.stderr,
          flush=True)
    os._exit(128 + signum)  # Ray's join thread cannot be stopped from Python: leave now


def connect(address: str, log: Callable[[str], None]) -> dict[str, float]:
    """Join the cluster at `address` ("auto", "ray://host:10001" or "host:6379"); returns its resources."""
    with stopped_by_sigterm():
        ray = import_ray()
        exc = None
        if not ray.is_initialized():
            reachable(address)
            exc = _join_bounded(ray, address)
    if isinstance(exc, TimeoutError):
        raise HyporagError(f"--ray {address}: something answers there, but no Ray cluster joined within "
                           f"{JOIN_SECONDS:g} s; is it the head's GCS port (6379, or ray://host:10001)?")
    if isinstance(exc, (ConnectionError, RuntimeError, ValueError)):
        raise HyporagError(f"--ray {address}: cannot join the Ray cluster ({str(exc).splitlines()[0][:200]}); "
                           "is `ray start --head` running there?") from None
    if exc is not None:
        raise exc
    resources = ray.cluster_resources()
    log(f"ray: joined {address} ({int(resources.get('CPU', 0))} CPUs, {int(resources.get('GPU', 0))} GPUs)")
    return resources


def encode_on_ray(window: Sequence[PendingShard], spec: dict[str, Any], write: Callable[[PendingShard, np.ndarray],
                  None], concurrency: int, batch_size: int, num_gpus: float, cpus_per_actor: float,
                  on_rows: Callable[[int], None]) -> None:
    """Encode the passages of `window`'s shards on the cluster, calling `write(shard, vectors)` per finished shard."""
    ray = import_ray()
    # a row's slot is its place in the window: the window's shards need not be adjacent (finished ones are skipped)
    rows = [{"row": slot, "title": p.title, "contents": p.contents}
            for slot, p in enumerate(p for shard in window for p in shard.passages)]
    starts = np.cumsum([0] + [len(shard.passages) for shard in window])
    shard_of = np.repeat(np.arange(len(window)), np.diff(starts))
    remaining = np.diff(starts)
    seen = np.zeros(len(rows), dtype=bool)
    vectors: np.ndarray | None = None
    dataset = ray.data.from_items(rows, override_num_blocks=max(1, min(len(rows) // batch_size, 4 * concurrency)))
    encoded = dataset.map_batches(
        PassageEncoder, fn_constructor_kwargs={"spec": spec, "batch_size": batch_size,
                                               "threads": max(1, int(cpus_per_actor))},
        batch_size=batch_size, batch_format="numpy", compute=ray.data.ActorPoolStrategy(size=concurrency),
        num_cpus=cpus_per_actor, num_gpus=num_gpus or None)
    for batch in encoded.iter_batches(batch_size=None, batch_format="numpy"):
        slots = batch["row"]
        if vectors is None:
            vectors = np.zeros((len(rows), batch["vector"].shape[1]), dtype=np.float32)
        fresh = ~seen[slots]
        if not fresh.all():  # a retried batch delivered twice: keep the first copy, count nothing twice
            slots, batch = slots[fresh], {k: v[fresh] for k, v in batch.items()}
        vectors[slots] = batch["vector"]
        seen[slots] = True
        on_rows(len(slots))
        for place, count in zip(*np.unique(shard_of[slots], return_counts=True), strict=True):
            remaining[place] -= count
            if remaining[place] == 0:
                write(window[place], vectors[starts[place]:starts[place + 1]])
    missing = [window[place].number for place in np.flatnonzero(remaining)]
    if missing:
        raise HyporagError(f"ray: shards {missing[:5]} came back incomplete ({int(remaining.sum())} passages "
                           "missing); re-run the same command to redo them")
