"""`hyporag.evaluate`: methods (or a frozen program, or programs you built) side by side, resumable, as a call.

    report = hyporag.evaluate(RunConfig(dataset="mmlu-med-dev", methods="cot,rag,chr", limit=20, out="runs/x"))
    report.accuracy("chr"), report.out / "summary.md"

`roles` may be LMRoles or one `dspy.LM` for every role; `examples` (dspy.Examples with question, options,
answer) replace the run's dataset; `programs` (name -> a built program) replace its methods.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hyporag.eval.ci_gate import check_bars, refuse_unknown_bars, write_junit, write_junit_error
from hyporag.eval.engine import record_run, refuse_all_errored
from hyporag.eval.regression import compare_runs, gate
from hyporag.eval.results_store import read_run_settings
from hyporag.eval.run_report import report_from_dir
from hyporag.eval.run_rows import current_rows
from hyporag.eval.shards import Shard
from hyporag.eval.summary import MethodSummary
from hyporag.eval.viewer import write_view
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.builders import (
    artifact_config,
    build_program,
    build_retriever,
    build_roles,
    fit_to_context,
    load_frozen,
    select_examples,
)
from hyporag.jobs.compare import StopRule, deltas_of, sequential_record
from hyporag.jobs.decision_plan import decision_plan
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import EvalSettings
from hyporag.jobs.speed import record_run_speed
from hyporag.jobs.tracking import code_version, flat_params, report_metrics, tracked
from hyporag.jobs.user_program import UserProgram, runs_as_is
from hyporag.lm.client import LMRoles
from hyporag.programs.base import cost_note
from hyporag.programs.config import ProgramConfig
from hyporag.programs.judge import ContextJudge
from hyporag.programs.registry import method_entry
from hyporag.questions.datasets import load_benchmark
from hyporag.questions.records import examples_from_python, question_fingerprint
from hyporag.retrieval.bm25_engines import engine_of_retriever, search_of_retriever


@dataclass
class EvalReport:
    """What an evaluation wrote and found: each method's summary (typed), the directory it is in, the dataset size,
    the methods below a `fail_under` bar, and the whole summary as summary.json holds it (`report`: the paired
    tests, DUR, lift and the other tables, for `hyporag.eval.run_report.markdown`)."""

    out: Path
    report: dict[str, Any]
    dataset_size: int
    failures: list[str] = field(default_factory=list)
    endpoints: dict[str, Any] = field(default_factory=dict)  # per LM over several servers: usage per endpoint
    comparison: dict[str, Any] | None = None  # with `against`: each method against itself in the earlier run

    @property
    def methods(self) -> list[MethodSummary]:
        return [MethodSummary.of(s) for s in self.report["methods"]]

    def summary(self, method: str) -> MethodSummary:
        for summary in self.methods:
            if summary.method == method:
                return summary
        raise KeyError(f"no method {method!r} in this run ({', '.join(s.method for s in self.methods)})")

    def accuracy(self, method: str) -> float:
        return self.summary(method).accuracy


def as_roles(roles, config: RunConfig):
    """LMRoles as given, one dspy.LM for every role, or (None) the run's LM specs."""

    if roles is None:
        return build_roles(config)
    return roles if isinstance(roles, LMRoles) else LMRoles.from_lms(roles)


def evaluate(run: RunConfig, settings: EvalSettings | None = None, roles=None, examples: Sequence | None = None,
             programs: Mapping[str, Any] | None = None, progress: bool = True) -> EvalReport:
    """Evaluate and report; an interrupted call re-run with the same settings resumes question by question (and,
    with `run.tracking.track`, continues the same MLflow run)."""
    settings = settings or EvalSettings()
    dataset_name = run.data.dataset or ("examples" if examples is not None else None)
    if dataset_name is None:
        raise HyporagError("eval: give --dataset (a benchmark name or a .jsonl/.csv path), or set it in hyporag.toml")
    suite = f"hyporag-eval-{Path(dataset_name).stem}"
    out = Path(run.control.out or Path("runs") / Path(dataset_name).stem)
    with tracked(run.tracking.track, "eval", out) as tracker:
        result = _evaluate(run, settings, roles, examples, programs, progress, dataset_name, suite, out, tracker)
        if tracker:
            log_evaluation(tracker, result.report, out)
    return result


def run_evaluation(programs: dict, examples: Sequence, out: str | Path, settings: dict[str, Any], threads: int = 1,
                   progress: bool = True, judge=None, debug: bool = False, until: StopRule | None = None,
                   finish=None) -> dict:
    """The engine answers and keeps the run record (run.json written by its store alone: with `until`, eval
    --until-decided's stop and why; with `finish`, what each endpoint served); the summary files and the page are
    then drawn from that record alone (as `hyporag report` and `view` draw them). A method all of whose questions
    errored fails the run after its record and report are written."""
    record = record_run(programs, examples, out, settings, threads=threads, progress=progress, judge=judge,
                        debug=debug, until=until, finish=finish)
    report = report_from_dir(record.out)
    report["view"] = str(write_view([record.out], questions=record.questions))
    refuse_all_errored(record.rows, record.out)
    return report


def log_evaluation(tracker, report: dict, out: Path, prefix: str = "", under: str | None = None) -> None:
    """An evaluation's metrics and files in the job's MLflow run (a reproduce cell's under its own names)."""
    tracker.metrics(report_metrics(report, prefix))
    tracker.artifacts(out, under=under)


def _evaluate(run: RunConfig, settings: EvalSettings, roles, examples, programs, progress: bool, dataset_name: str,
              suite: str, out: Path, tracker) -> EvalReport:
    try:
        examples, where, source, size = _questions(run, examples)
        shard = Shard.parse(settings.shard, "eval: shard") if settings.shard else None
        shard_record = shard.record(examples) if shard else None
        examples = shard.take(examples) if shard else examples
        if run.control.program:
            run = artifact_config(run)
        roles = as_roles(roles, run)
        configs = {}  # the typed config of each program hyporag builds here (a user's programs bring their own)
        if programs is not None:  # a user's plain dspy.Module answers with the answer role's LM, metered
            programs = {m: p if runs_as_is(p) else UserProgram(p, roles) for m, p in programs.items()}
            retriever = next((p.retriever for p in programs.values() if getattr(p, "retriever", None)), None)
        elif run.control.program:
            frozen = load_frozen(run, roles)
            name = f"{frozen.method}@{Path(run.control.program).name}"
            retriever, programs, configs = frozen.retriever, {name: frozen}, {name: run.methods[0].config}
        else:
            uses = [method_entry(m).program.uses_retrieval for m in run.method_names]
            retriever = build_retriever(run, any(uses))
            programs = {m: build_program(m, run, retriever, roles) for m in run.method_names}
            configs = {m.name: m.config for m in run.methods}
        if settings.fail_under:  # a bar may name any method the directory will hold: the earlier ones too
            refuse_unknown_bars(settings.fail_under, list(dict.fromkeys([*_methods_in(out), *programs])))
        if settings.until_decided and settings.max_questions:  # the budget: the first N of the seeded list
            examples = examples[: settings.max_questions]
        planned = len(examples)
        examples, context_check = fit_to_context(examples, where, programs, roles, run)
        if not examples:
            raise HyporagError(f"{dataset_name}: no question fits the context of {roles.answer.spec}")
        # what the programs really run with (a --program brings its own budget and answer step, not the flags')
        recorded = {"dataset": dataset_name, "dataset_source": source, "n": len(examples), "seed": run.data.seed,
                    **run_record(programs, roles, retriever, configs), "dur": run.control.dur,
                    "baseline": run.control.baseline,
                    "effective": {m: settings_of(p, effective=True) for m, p in programs.items()},
                    "skipped_too_long": planned - len(examples), "context_check": context_check,
                    "code_version": code_version(), **({"shard": shard_record} if shard else {}),
                    "sequential": sequential_record(settings)}
        if settings.against:  # a baseline that cannot gate is refused before the first call, not after the last
            check_against(settings, list(programs), examples)
        until = StopRule(settings, list(programs), run.control.baseline) if settings.until_decided else None
        for line in filter(None, (cost_note(m, p) for m, p in programs.items())):
            print(line, file=sys.stderr)
        plan = decision_plan(settings, list(programs), run.control.baseline, len(examples),
                             sum(getattr(p, "calls_per_question", 1.0) for p in programs.values()), run.data.seed)
        if plan:
            print("\n".join(plan["lines"]), file=sys.stderr)
            recorded["sequential"]["plan"] = {k: v for k, v in plan.items() if k != "lines"}
        if tracker:
            tracker.params(flat_params("", {k: recorded[k] for k in (
                "dataset", "n", "seed", "methods", "lms", "adapters", "budget", "retriever", "dur",
                "index_fingerprint", "program")}))
        judge = ContextJudge(roles.judge) if run.control.dur else None
        served: dict[str, Any] = {}

        def finish(previous: dict | None) -> dict:  # a run stopped by a dead pool keeps what each endpoint served
            served.update(merged_endpoints((previous or {}).get("endpoints") or {}, roles))
            return {"endpoints": served} if served else {}

        report = run_evaluation(programs, examples, out, recorded, threads=run.control.threads, judge=judge,
                                progress=progress, debug=run.control.debug, until=until, finish=finish)
        record_run_speed(roles, report, recorded)  # seconds per call at this budget, for fit's estimate
        failures, comparison = check_bars(report["methods"], settings.fail_under), None
        if settings.against:  # the regression gate: each method against itself in the earlier run
            comparison = compare_runs(out, settings.against, settings.alpha, deltas_of(settings), settings.decide_on,
                                      settings.min_paired)
            gated = gate(comparison, settings.fail_if_worse, settings.min_paired)
            failures += gated
    except (HyporagError, KeyboardInterrupt) as exc:
        if settings.junit:  # every outcome writes the file: an older one must never stand for this run
            code = 130 if isinstance(exc, KeyboardInterrupt) else exc.exit_code
            write_junit_error(settings.junit, suite, str(exc) or "interrupted", code)
        raise
    if settings.junit:
        write_junit(settings.junit, report["methods"], settings.fail_under, suite, comparison,
                    gated if comparison is not None else ())
    return EvalReport(out, report, size, failures, served, comparison)


def check_against(settings: EvalSettings, methods: list[str], examples: Sequence) -> None:
    """`--against`'s run must be readable, hold a method of this run, and share at least `min_paired` of this run's
    questions (by content): otherwise the gate could only ever pair nothing, and "undecided" would pass it."""
    _, rows, _, _ = current_rows(settings.against)
    if not rows:
        raise HyporagError(f"--against {settings.against}: it holds no result rows to compare with")
    mine = {question_fingerprint(e) for e in examples}
    theirs = {r.get("question_fingerprint") for r in rows if r["method"] in methods}
    if not theirs:
        raise HyporagError(f"--against {settings.against}: it holds none of this run's methods "
                           f"({', '.join(methods)}); its methods are {', '.join(sorted({r['method'] for r in rows}))}")
    shared = len(mine & theirs)
    if shared < settings.min_paired:
        raise HyporagError(f"--against {settings.against}: it answered {shared} of this run's {len(mine)} "
                           f"questions, fewer than the {settings.min_paired} a comparison needs (--min-paired); is it "
                           "a run of the same dataset?")


def _methods_in(out: Path) -> list[str]:
    """The methods an earlier run left in `out` (none when it holds no run)."""
    try:
        return list(read_run_settings(out).get("methods") or [])
    except (OSError, HyporagError):
        return []


def merged_endpoints(earlier: dict, roles) -> dict:
    """run.json's `endpoints`: per LM over several servers, each endpoint's calls, tokens, seconds and failures,
    this session's added to earlier sessions' (empty when nothing was served this session)."""
    usage = roles.endpoint_usage() if hasattr(roles, "endpoint_usage") else {}
    if not any(c["calls"] or c["failures"] for e in usage.values() for c in e["endpoints"].values()):
        return {}  # nothing served this session
    for spec, entry in usage.items():
        before = (earlier.get(spec) or {}).get("endpoints") or {}
        for base, counts in entry["endpoints"].items():
            for key, value in (before.get(base) or {}).items():
                if isinstance(value, (int, float)) and key in counts:
                    counts[key] = round(counts[key] + value, 3)
    return usage


def _questions(run: RunConfig, examples: Sequence | None) -> tuple[list, Any, str, int]:
    """(the questions to run, where each came from, the source, the dataset's size)."""
    if examples is not None:  # checked and normalised as a file's rows are
        given = examples_from_python(examples)
        chosen = select_examples(given.examples, run.data.limit, run.data.seed)
        return chosen, given.where, given.source, len(given.examples)

    loaded = load_benchmark(run.data.dataset, run.data.data_dir, skip_bad_rows=run.data.skip_bad_rows)
    if loaded.skipped:
        print(f"skipped {len(loaded.skipped)} bad rows (first: {loaded.skipped[0]})", file=sys.stderr)
    chosen = select_examples(loaded.examples, run.data.limit, run.data.seed)
    return chosen, loaded.where, loaded.source, len(loaded.examples)


def run_record(programs: dict, roles, retriever, configs: dict[str, ProgramConfig]) -> dict:
    """What run.json records of the programs, LMs and index a run used: every evaluation writes it alike (eval,
    a fit's held-out and validation runs), so report, view and resume read the same fields. The shared budget and
    reasoning come from the typed `configs` the programs were built with; a program given from Python without
    one is recorded as it describes itself."""
    return {"methods": list(programs), "lms": roles.specs(), "lm_identities": roles.identities(),
            "adapters": roles.adapters(), "budget": shared_setting(programs, configs, "budget"),
            "reasoning": shared_setting(programs, configs, "reasoning"), "retriever": getattr(retriever, "mode", None),
            "index_fingerprint": getattr(retriever, "fingerprint", None), "bm25_engine": engine_of_retriever(retriever),
            "bm25_search": search_of_retriever(retriever),
            "index_dir": str(retriever.directory) if getattr(retriever, "directory", None) else None,
            "program": {m: settings_of(p) for m, p in programs.items()}}


def settings_of(program, effective: bool = False) -> dict:
    """A program's settings for run.json: a hyporag program's own; any other dspy.Module (a user's) is recorded
    by its class, which is all hyporag can know of it."""
    read = getattr(program, "effective_settings" if effective else "settings", None)
    if callable(read):
        return read()
    kind = type(program)
    return {"method": "user", "class": f"{kind.__module__}.{kind.__qualname__}"}


def shared_setting(programs: dict, configs: dict[str, ProgramConfig], key: str):
    """One setting across the run's programs: its value when they agree, else the value per method."""
    values = {m: getattr(configs[m], key, None) if m in configs else settings_of(p).get(key)
              for m, p in programs.items()}
    distinct = {json.dumps(v, sort_keys=True) for v in values.values()}
    return next(iter(values.values())) if len(distinct) == 1 else values
