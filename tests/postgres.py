"""A throwaway PostgreSQL server for the distributed-tuning test: a private cluster in a temporary directory,
listening on 127.0.0.1 only, run as the `postgres` user when the tests run as root (PostgreSQL refuses root)."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hyporag.testing import free_port


def server_binaries() -> Path | None:
    """The directory holding initdb and pg_ctl (Debian keeps them under /usr/lib/postgresql/<version>/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl else None


def _as_owner(command: list[str], owner: str | None) -> list[str]:
    return ["runuser", "-u", owner, "--", *command] if owner else command


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """Yield a SQLAlchemy URL of a fresh database; raises RuntimeError saying why when none can be started.

    The cluster lives in its own directory under the system temp dir (pytest's is private to root, and the
    server runs as `postgres`) and is removed afterwards."""
    binaries = server_binaries()
    if binaries is None:
        raise RuntimeError("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    owner = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            raise RuntimeError("running as root and there is no 'postgres' user to run the server") from None
        owner = "postgres"
    root = Path(tempfile.mkdtemp(prefix="hyporag-pg-"))
    data = root / "pgdata"
    data.mkdir()
    if owner:
        shutil.chown(root, owner)
        shutil.chown(data, owner)
    port = free_port()
    run = lambda command: subprocess.run(_as_owner(command, owner), capture_output=True, text=True)  # noqa: E731
    init = run([str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"])
    if init.returncode:
        raise RuntimeError(f"initdb failed: {init.stderr.strip()[-300:]}")
    options = f"-p {port} -c listen_addresses=127.0.0.1 -k {data} -c fsync=off"
    start = run([str(binaries / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(data / "log"), "-w", "start"])
    if start.returncode:
        raise RuntimeError(f"pg_ctl start failed: {start.stderr.strip()[-300:]}")
    try:
        created = run([str(binaries / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "tune"])
        if created.returncode:
            raise RuntimeError(f"createdb failed: {created.stderr.strip()[-300:]}")
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/tune"
    finally:
        run([str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
        shutil.rmtree(root, ignore_errors=True)
