"""Errors a user can act on.

Every error raised for bad input derives from `HyporagError`; the CLI prints it as one line and exits with
status 2, so a user sees which file, line or field to fix instead of a traceback.
"""

from __future__ import annotations


class HyporagError(Exception):
    """A problem the user can fix (bad input, missing data, mismatched index); CLI exit status 2."""

    exit_code = 2


class ConfigError(HyporagError, ValueError):
    """A setting the library cannot use (unknown mode, policy, schedule, metric, budget, missing index part).

    It is also a ValueError, so API users who catch ValueError for bad arguments keep working."""


class DataError(HyporagError):
    """A dataset or corpus file is missing or malformed; the message names the file and line."""


class ModelError(HyporagError):
    """A language model cannot be found, assembled, verified or reached."""


class IndexMismatchError(HyporagError):
    """An index or artifact does not match the corpus, version or files it claims to."""


class BackendError(HyporagError):
    """The LM backend cannot be reached (after DSPy's retries with backoff); finished work is kept."""

    exit_code = 3


class RunFailedError(HyporagError):
    """Every question of a method errored: its accuracy of 0 would look like a result, so the run fails (exit 4)
    after keeping its rows and report."""

    exit_code = 4


class DiskFullError(HyporagError):
    """The disk (or quota) filled while writing results or artifacts; what was written before is intact (exit 5)."""

    exit_code = 5
