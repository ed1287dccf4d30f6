"""`hyporag` command line: a thin shell that parses flags into the library's typed settings and calls the job.

Each command is one module here, `<command>_command.py`, owning its parser (`add_parser`) and its call (`run`); the
job it calls is `hyporag.jobs.<job>` and that job's engine lives in its layer (eval/engine.py, optimizers/study.py,
optimizers/teleprompter.py). User errors (bad files, unknown names, mismatched indexes) print one line and exit 2;
`--debug` shows tracebacks.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys

from hyporag import __version__
from hyporag.cli import (
    ask_command,
    compile_command,
    data_command,
    demo_command,
    embed_command,
    eval_command,
    fit_command,
    index_command,
    merge_command,
    report_command,
    reproduce_command,
    tune_command,
    view_command,
)
from hyporag.cli.common import load_settings
from hyporag.foundation.atomic import raise_if_disk_full
from hyporag.foundation.errors import DiskFullError, HyporagError
from hyporag.foundation.redact import printable, redact_text
from hyporag.jobs.run_config import PROJECT_FILE, RunConfig
from hyporag.lm.client import explain_lm_error

MODULES = (data_command, index_command, embed_command, ask_command, eval_command, merge_command, report_command,
           view_command, compile_command, tune_command, fit_command, reproduce_command, demo_command)
COMMANDS = {"list": data_command.run, "build": index_command.run, "ask": ask_command.run, "eval": eval_command.run,
            "report": report_command.run, "compile": compile_command.run, "tune": tune_command.run,
            "fit": fit_command.run, "reproduce": reproduce_command.run, "demo": demo_command.run,
            "view": view_command.run, "merge": merge_command.run, "embed": embed_command.run,
            **dict.fromkeys(("faiss-train", "faiss-add", "faiss-merge"), index_command.run_sharded_faiss)}
NEEDS_CONFIG = {"list", "report", "demo"}  # the others build their own typed settings


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hyporag", description=__doc__)
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="version", version=f"hyporag {__version__}")
    parser.add_argument("--config", help=f"project file (default ./{PROJECT_FILE} when it exists)")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in MODULES:
        module.add_parser(sub)
    return parser


def run_config(args: argparse.Namespace) -> RunConfig:
    """The run's shared settings: defaults < project file (its top level, then the command's table) < flags."""
    return load_settings(args)[0]


def _dispatch(args: argparse.Namespace) -> int:
    key = getattr(args, "data_command", None) or getattr(args, "index_command", None) or args.command
    if key in NEEDS_CONFIG:
        return COMMANDS[key](args, run_config(args))
    return COMMANDS[key](args)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        return _dispatch(args)
    except HyporagError as exc:
        if args.debug:
            raise
        print(f"hyporag: error: {printable(redact_text(str(exc)))}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # `hyporag data list | head`: the reader left, which is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:
        from dspy.utils.exceptions import LMError

        if not args.debug and isinstance(exc, OSError):
            try:
                raise_if_disk_full(exc, exc.filename or "a file")  # the one message atomic writes give too
            except DiskFullError as full:
                print(f"hyporag: error: {full}", file=sys.stderr)
                return full.exit_code
            # a path the user gave that cannot be written or read: one line, exit 2
            if exc.filename and exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.EISDIR, errno.ENOTDIR):
                print(f"hyporag: error: {printable(redact_text(str(exc.filename)))}: {exc.strerror or exc}",
                      file=sys.stderr)
                return 2
        if args.debug or not isinstance(exc, LMError):
            raise

        print(f"hyporag: error: LM backend: {explain_lm_error(exc)}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("hyporag: interrupted; re-run the same command to resume", file=sys.stderr)
        return 130

