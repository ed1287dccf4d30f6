"""Runs tracked in MLflow (`--track URI`, `track = "..."` in hyporag.toml; needs `pip install 'hyporag[mlflow]'`).

Each job is one MLflow run: params (method settings, protocol, parse rule, LMs per role, corpus fingerprint, code
version), metrics (accuracy and its interval per method, DUR, calls / tokens / seconds per question), artifacts
(results, summaries, report.html, plots, a frozen artifact) and DSPy traces through `mlflow.dspy.autolog`. The
MLflow run id is kept in the job's output directory, so a resumed job continues the same MLflow run instead of
starting a second one; an interrupted job ends KILLED and a failed one FAILED, never FINISHED.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import subprocess
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hyporag import __version__
from hyporag.foundation.atomic import write_json_atomic
from hyporag.foundation.errors import BackendError, ConfigError
from hyporag.foundation.redact import redact_text, redact_url, split_userinfo

RUN_FILE = "mlflow_run.json"
EXPERIMENT = "hyporag"


def _mlflow():
    try:
        import mlflow
    except ImportError:
        raise ConfigError("--track needs MLflow: pip install 'hyporag[mlflow]' (or pip install mlflow)") from None
    return mlflow


def code_version() -> str:
    """hyporag's version and, in a git checkout, the commit (with `+dirty` for uncommitted changes)."""

    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "-C", str(here), "describe", "--always", "--dirty=+dirty"],
                                capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{__version__} ({commit})" if commit else __version__


def flat_params(prefix: str, value: Any, out: dict[str, str] | None = None) -> dict[str, str]:
    """Nested settings as MLflow params: `program.chr.lam = 1.0`; values cut to MLflow's 6,000 characters."""
    out = {} if out is None else out
    if isinstance(value, dict):
        for key, item in value.items():
            flat_params(f"{prefix}.{key}" if prefix else str(key), item, out)
    else:
        out[prefix] = (value if isinstance(value, str) else json.dumps(value, default=str))[:6000]
    return out


def report_metrics(report: dict, prefix: str = "") -> dict[str, float]:
    """Per-method accuracy with its interval, DUR, the decision margin (log p_gold, p_gold, margin, lift over cot),
    passage pulls, the on-demand retrieval share, where a comparison was decided, and cost per question, as
    `rag.accuracy`, `rag.ci95_low`, `chr.lift_over_cot`, ..."""
    metrics: dict[str, float] = {}
    for s in report.get("methods", []):
        for key in ("accuracy", "ci95_low", "ci95_high", "dur", "parse_failures", "errors", "calls_per_q",
                    "input_tokens_per_q", "output_tokens_per_q", "seconds_per_q", "gold_in_context",
                    "distractor_in_context", "vs_rag_difference", "vs_rag_p_value", "log_p_gold", "p_gold",
                    "margin", "vs_rag_lead_difference", "vs_rag_lead_p_value", "lift_over_cot", "lift_positive",
                    "pull_gold", "pull_distractor", "retrieved_share", "decided_at"):
            if isinstance(s.get(key), int | float):
                metrics[metric_name(f"{prefix}{s['method']}.{key}")] = float(s[key])
    return metrics


def metric_name(name: str) -> str:
    """MLflow names allow letters, digits, `_ - . / space`; a method like `chr@artifact` keeps its meaning."""
    return "".join(c if c.isalnum() or c in "_-./ " else "_" for c in name)


class TrackingLost(BackendError):
    """The MLflow server stopped answering while a job logged to it: the job's own files are kept (exit 6)."""

    exit_code = 6


def _guarded(method):
    """A Tracker call that fails (the MLflow server gone mid-job) raises one line, not MLflow's chained traces."""
    @functools.wraps(method)
    def call(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:  # MLflow raises its own, requests' and urllib3's errors: all mean the same here
            raise TrackingLost(f"--track {self.uri}: the MLflow server stopped answering ({type(exc).__name__}: "
                               f"{redact_text(str(exc).splitlines()[0] if str(exc) else '')[:160]}); the job's "
                               "results are kept; re-run the same command to finish logging its MLflow run") from None
    return call


class Tracker:
    """The open MLflow run of one job: what the job logs as it learns it."""

    def __init__(self, mlflow, run_id: str | None, uri: str = "") -> None:
        self.mlflow, self.run_id, self.uri = mlflow, run_id, uri

    @_guarded
    def params(self, params: dict[str, str]) -> None:
        logged = self.mlflow.get_run(self.run_id).data.params
        fresh = {k: v for k, v in params.items() if k not in logged}  # a resumed run keeps its first params
        for start in range(0, len(fresh), 100):
            self.mlflow.log_params(dict(list(fresh.items())[start:start + 100]))

    @_guarded
    def metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        if metrics:
            self.mlflow.log_metrics(metrics, step=step)

    @_guarded
    def artifacts(self, directory: Path, names: tuple[str, ...] = ("results.jsonl", "summary.md", "summary.json",
                                                                   "report.html", "run.json"),
                  under: str | None = None) -> None:
        for name in names:
            if (directory / name).is_file():
                self.mlflow.log_artifact(str(directory / name), artifact_path=under)
        for plot in sorted(directory.glob("*.png")):
            self.mlflow.log_artifact(str(plot), artifact_path=under)

    @_guarded
    def directory(self, directory: Path, under: str) -> None:
        if directory.is_dir():
            self.mlflow.log_artifacts(str(directory), artifact_path=under)

    @_guarded
    def child(self, name: str, params: dict[str, str], metrics: dict[str, float]) -> None:
        """One nested run (a tune trial), finished at once; one already logged (a resumed job) is not logged again."""
        found = self.mlflow.search_runs(filter_string=f"tags.mlflow.parentRunId = '{self.run_id}' and "
                                        f"tags.`hyporag.child` = '{name}'", output_format="list")
        if found:
            return
        with self.mlflow.start_run(run_name=name, nested=True, tags={"hyporag.child": name}):
            self.mlflow.log_params(params)
            self.mlflow.log_metrics(metrics)


def settings_params(settings: Any, run: Any) -> dict[str, str]:
    """A job's typed settings and the run's program settings and LMs, as params."""
    import dataclasses

    return flat_params("", {"job": dataclasses.asdict(settings), "program": dict(run.program_settings),
                            "lms": {"lm": run.lms.lm, "hypothesis": run.lms.hypothesis_lm, "answer": run.lms.answer_lm,
                                    "judge": run.lms.judge_lm}, "dataset": run.data.dataset, "corpus": run.data.corpus,
                            "seed": run.data.seed, "limit": run.data.limit})


def tracking_target(uri: str) -> tuple[str, str | None, tuple[str, str] | None]:
    """(the URI MLflow is given, an artifact root for a local store, credentials): a folder or `file:` URI becomes a
    SQLite store in that folder (MLflow 3's file store is in maintenance mode), and a user and password in an HTTP
    URI travel as MLflow's basic-auth variables, so no file or line MLflow prints holds them."""
    if uri.startswith("file:") or "://" not in uri and not uri.startswith(("sqlite:", "databricks", "postgresql:",
                                                                           "mysql:")):
        folder = Path(urllib.parse.urlparse(uri).path if uri.startswith("file:") else uri).expanduser().resolve()
        if folder.exists() and not folder.is_dir():
            raise ConfigError(f"--track {uri}: is a file; give a folder (a local store is kept in it) or a URI")
        folder.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{folder / 'mlflow.db'}", (folder / "artifacts").as_uri(), None
    clean, credentials = split_userinfo(uri)
    return clean, None, credentials


@contextlib.contextmanager
def _credentials(credentials: tuple[str, str] | None) -> Iterator[None]:
    if not credentials:
        yield
        return
    names = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")
    before = {n: os.environ.get(n) for n in names}
    os.environ.update(dict(zip(names, credentials, strict=True)))
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def tracked(uri: str | None, job: str, out_dir: str | Path | None, tags: dict[str, str] | None = None,
            beside: bool = False) -> Iterator[Tracker | None]:
    """An MLflow run around a job, or nothing when `uri` is None. Resumes the run recorded in `out_dir` (`beside`
    it, as `<out_dir>.mlflow_run.json`, for an artifact directory, which a freeze replaces whole)."""
    if not uri:
        yield None
        return
    target, artifact_root, credentials = tracking_target(uri)
    shown = redact_url(uri)  # what is written and printed: never a password
    with _credentials(credentials), _tracked(target, artifact_root, shown, job, out_dir, tags, beside) as tracker:
        yield tracker


@contextlib.contextmanager
def _tracked(target: str, artifact_root: str | None, shown: str, job: str, out_dir: str | Path | None,
             tags: dict[str, str] | None, beside: bool) -> Iterator[Tracker]:
    # an unreachable server fails in seconds, not after MLflow's default minutes of retries
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")
    mlflow = _mlflow()
    mlflow.set_tracking_uri(target)
    try:
        if artifact_root and mlflow.get_experiment_by_name(EXPERIMENT) is None:
            mlflow.create_experiment(EXPERIMENT, artifact_location=artifact_root)
        mlflow.set_experiment(EXPERIMENT)
    except Exception as exc:  # MLflow raises its own and requests' errors; all mean the same here
        raise BackendError(f"--track {shown}: the MLflow tracking server did not answer ({type(exc).__name__}: "
                           f"{redact_text(str(exc).splitlines()[0] if str(exc) else '')[:200]}); start it or drop "
                           "--track") from None
    record = None if not out_dir else Path(f"{out_dir}.{RUN_FILE}") if beside else Path(out_dir) / RUN_FILE
    known = json.loads(record.read_text()) if record and record.is_file() else {}
    resume = known.get("run_id") if known.get("tracking_uri") in (shown, redact_url(target)) else None
    tracker = Tracker(mlflow, None, shown)
    run = _guarded(lambda self: mlflow.start_run(run_id=resume) if resume else
                   mlflow.start_run(run_name=f"{job} {out_dir or ''}".strip()))(tracker)
    tracker.run_id = run.info.run_id
    if record:
        record.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(record, {"run_id": run.info.run_id, "tracking_uri": shown, "job": job})
    version = code_version()
    _guarded(lambda self: _start_logging(mlflow, run.info.run_id, job, version, tags))(tracker)
    autolog = getattr(getattr(mlflow, "dspy", None), "autolog", None)
    if autolog:
        autolog(log_traces=True, silent=True)
    status = "FAILED"
    try:
        yield tracker
        status = "FINISHED"
    except KeyboardInterrupt:
        status = "KILLED"
        raise
    except TrackingLost:
        status = None  # the server is gone: the run stays open, and the resume finishes it
        # traces still queued would each print a warning after the one line that says what happened
        logging.getLogger("mlflow").setLevel(logging.CRITICAL)
        _forget_active_run()
        raise
    finally:
        if autolog:
            autolog(disable=True, silent=True)
        if status is not None:
            try:
                mlflow.end_run(status=status)
            except Exception as exc:  # noqa: BLE001 (the job's outcome stands; a resume ends the run)
                if status == "FINISHED":
                    raise TrackingLost(f"--track {shown}: the MLflow server stopped answering before the run "
                                       "could be closed; the job's results are kept; re-run the same command to "
                                       f"finish its MLflow run ({type(exc).__name__})") from None


def _forget_active_run() -> None:
    """Drop this process's handle on the run without asking the (gone) server, so a later job in the same process
    (a notebook) can start its own; the server-side run stays RUNNING until a resume finishes it."""
    with contextlib.suppress(Exception):  # MLflow's own state: best effort, never a second error
        from mlflow.tracking import fluent

        stack = fluent._active_run_stack.get()
        if stack:
            stack.pop()
        fluent.MLFLOW_RUN_ID.unset()


def _start_logging(mlflow, run_id: str, job: str, version: str, tags: dict[str, str] | None) -> None:
    mlflow.set_tags({"hyporag.job": job, "hyporag.code_version": version, **(tags or {})})
    if "code_version" not in mlflow.get_run(run_id).data.params:
        mlflow.log_param("code_version", version)


@contextlib.contextmanager
def tracked_job(run: Any, job: str, settings: Any, out_dir: str | Path | None, beside: bool = False
                ) -> Iterator[Tracker | None]:
    """`tracked` for a job with typed settings: its settings and the run's are the MLflow run's params."""
    with tracked(run.tracking.track, job, out_dir, beside=beside) as tracker:
        if tracker:
            tracker.params(settings_params(settings, run))
        yield tracker
