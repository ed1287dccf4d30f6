"""Processes: is one still alive (a live writer's lock or trial, or one a killed run left behind), and stopping one
this program started."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def stop_process(proc: subprocess.Popen, grace: float = 10.0, group: bool = False) -> int | None:
    """Stop a process this program started: SIGTERM, up to `grace` seconds, then SIGKILL. With `group`, the signals
    go to its whole process group (a server started with `start_new_session=True` and the workers it forked). Never
    raises for a process that is already gone or slow to go: a test that passed must not fail in its teardown
    because a loaded machine took longer than `grace` to stop a server."""
    def send(sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)

    if proc.poll() is None:
        send(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            send(signal.SIGKILL)
            proc.wait()
    elif group:  # the leader is gone; anything it left in its group goes too
        send(signal.SIGKILL)
    return proc.returncode
