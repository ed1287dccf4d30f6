"""Where an Optuna study lives, and what keeps several workers on one study honest.

- A journal file by default (one machine); any RDB URL (`postgresql://...`) for several machines.
- Workers claim each new trial under a lock (a PostgreSQL advisory lock, or a file lock beside the journal), so
  they never start more trials than the study asked for, and a study ends with exactly its number of trials.
- A killed worker's trial is failed and its parameters queued again, once: on an RDB by heartbeats (Optuna's
  `RetryHeartbeatStaleTrialCallback`, any machine), on a journal by the worker's pid (this host).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

from hyporag.foundation.errors import ConfigError
from hyporag.foundation.processes import pid_alive
from hyporag.foundation.redact import redact_url
from hyporag.optimizers.sequential_pruner import SequentialPruner

HEARTBEAT_SECONDS = 10


def _journal(path: Path):
    import optuna
    from optuna.storages.journal import JournalFileBackend

    path.parent.mkdir(parents=True, exist_ok=True)
    return optuna.storages.JournalStorage(JournalFileBackend(str(path)))


def open_study(name: str, storage: str | None, seed: int, directory: Path, heartbeat: int = HEARTBEAT_SECONDS,
               create: bool = True):
    """Create or load the study; the sampler is seeded, the pruner stops a trial surely worse than the best. With
    `create=False` (reading a study back) a study that does not exist is an error, not a new empty one."""
    import optuna
    from optuna.storages import RetryHeartbeatStaleTrialCallback

    journal = None if storage and "://" in storage else (
        Path(storage) if storage and storage.strip() else directory / f"{name}.journal")
    if not create and journal is not None and not journal.is_file():
        raise ConfigError(f"no study journal at {journal}: give the --storage the study ran with")
    if journal is not None:
        refuse_non_journal(journal)
    if journal is None:
        with quiet_optuna():
            backend = optuna.storages.RDBStorage(
                storage, heartbeat_interval=heartbeat, grace_period=3 * heartbeat,
                heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=1))
    else:
        backend = _journal(journal)
    if not create:
        names = optuna.get_all_study_names(backend)
        if name not in names:
            where = journal or redact_url(storage)
            raise ConfigError(f"no study named {name!r} in {where} (it holds: {', '.join(sorted(names)) or 'none'})")
    study = optuna.create_study(study_name=name, storage=backend, load_if_exists=True, direction="maximize",
                                sampler=optuna.samplers.TPESampler(seed=seed),
                                pruner=SequentialPruner())
    study.hyporag_journal = getattr(getattr(backend, "_backend", None), "_file_path", None)
    return study


def refuse_non_journal(path: Path, probe_bytes: int = 1 << 16) -> None:
    """A --storage file that exists must already be an Optuna journal (one JSON record with an `op_code` per line):
    a typo naming the dataset or a notes file is refused before Optuna appends a record to it."""
    if path.is_dir():
        raise ConfigError(f"--storage {path}: is a directory; give a journal file (or an RDB URL)")
    if not path.exists() or path.stat().st_size == 0:
        return
    try:
        with path.open("rb") as handle:
            head = handle.read(probe_bytes)
        lines = head.decode("utf-8").splitlines()
        complete = lines[:-1] if len(head) == probe_bytes and len(lines) > 1 else lines
        records = [json.loads(line) for line in complete if line.strip()]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        records = None
    if not records or not all(isinstance(r, dict) and "op_code" in r for r in records):
        raise ConfigError(f"--storage {path}: exists and is not an Optuna journal; give a new file or the journal "
                          "the study ran with (nothing was written to it)")


def study_location(study, storage: str | None) -> str:
    """Where a study lives, for messages: its journal file, or its database URL without a password."""
    return str(getattr(study, "hyporag_journal", None) or redact_url(storage) or study.study_name)


@contextlib.contextmanager
def claim(study) -> Iterator[None]:
    """Serialise "count the trials, then start one" across workers on this study."""
    storage = study._storage
    engine = getattr(storage, "engine", None)
    if engine is not None and engine.dialect.name == "postgresql":
        from sqlalchemy import text

        key = int.from_bytes(hashlib.sha256(f"hyporag:{study.study_name}".encode()).digest()[:8], "big", signed=True)
        with engine.connect() as connection:
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
            try:
                yield
            finally:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
        return
    journal = getattr(study, "hyporag_journal", None)
    if journal:
        from filelock import FileLock

        with FileLock(f"{journal}.claim"):
            yield
        return
    yield  # another RDB: no cross-worker lock, so two workers may overshoot the trial count by one


@contextlib.contextmanager
def quiet_optuna() -> Iterator[None]:
    """Optuna calls heartbeats experimental and warns when they are used outside `Study.optimize`; this module
    uses them on purpose (ask/tell under a claim), so those notices say nothing a user can act on."""
    import warnings

    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used")
        yield


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def recover_stale_trials(study) -> int:
    """Fail RUNNING trials whose worker is gone and queue their parameters again once; returns how many."""
    import optuna
    from optuna.trial import TrialState

    if hasattr(study._storage, "get_heartbeat_interval") and study._storage.get_heartbeat_interval():
        before = len(study.get_trials(deepcopy=False, states=(TrialState.FAIL,)))
        with quiet_optuna():
            optuna.storages.fail_stale_trials(study)  # its retry callback re-queues each exactly once
        return len(study.get_trials(deepcopy=False, states=(TrialState.FAIL,))) - before
    recovered, host = 0, socket.gethostname()
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker_host, _, pid = str(trial.user_attrs.get("worker", "")).rpartition(":")
        if worker_host != host or not pid.isdigit() or pid_alive(int(pid)) or int(pid) == os.getpid():
            continue
        failed_now = study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
        if failed_now and trial.params and "retry_of" not in trial.user_attrs:  # a dead retry is not re-queued
            study.enqueue_trial(trial.params, user_attrs={"retry_of": trial.number}, skip_if_exists=False)
        recovered += 1
    return recovered


@contextlib.contextmanager
def heartbeat(study, trial) -> Iterator[None]:
    """Record the trial's heartbeat while it runs (RDB storages with heartbeats; a no-op otherwise)."""
    storage = study._storage
    interval = storage.get_heartbeat_interval() if hasattr(storage, "get_heartbeat_interval") else None
    if not interval:
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        while True:
            storage.record_heartbeat(trial._trial_id)
            if stop.wait(interval):
                return

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
