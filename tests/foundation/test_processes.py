"""Stopping a server a test started: a server that ignores SIGTERM (or takes longer than the grace on a loaded
machine) is killed, and the teardown neither hangs nor raises."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from hyporag.foundation.processes import pid_alive, stop_process

STUBBORN = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); "
            "time.sleep(120)")


def stubborn(**popen) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE, text=True, **popen)
    assert proc.stdout.readline().strip() == "up"  # its SIGTERM handler is in place
    return proc


def test_a_server_that_ignores_sigterm_is_killed_after_the_grace():
    proc = stubborn()
    started = time.monotonic()
    assert stop_process(proc, grace=0.5) == -signal.SIGKILL
    assert time.monotonic() - started < 10 and not pid_alive(proc.pid)


def test_a_process_group_is_killed_and_a_finished_process_is_left_alone():
    proc = stubborn(start_new_session=True)
    assert stop_process(proc, grace=0.5, group=True) == -signal.SIGKILL
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    assert stop_process(done, grace=0.5) == 0
