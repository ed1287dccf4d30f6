"""The evaluation engine: `answer_all` is the loop `hyporag eval`, `compile`'s validation scores and every `tune`
trial run through; `record_run` runs it into a results directory, resuming what a killed run finished, and writes
the run record (rows, questions.jsonl, run.json) and nothing else: the summary files and the page are readers of
that record (hyporag.eval.run_report, hyporag.eval.viewer), which the job calls after the engine, as `hyporag report`
and `hyporag view` call them on any run.

Each (method, question) runs in `run_parallel` (so DSPy's context reaches every thread), becomes one result row,
and goes to an optional `sink` (the results store) as soon as it is done. A failing question is an error row,
never fatal to the run; a dead backend (after DSPy's retries) or a user error stops it.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import dspy
from dspy.utils.exceptions import LMAuthError, LMError, LMTransportError

from hyporag.eval.belief import decision_measures
from hyporag.eval.evidence import option_evidence
from hyporag.eval.parallel import run_parallel
from hyporag.eval.pulls import passage_pulls
from hyporag.eval.results_store import ResultsStore
from hyporag.eval.row import ResultRow, processed_of
from hyporag.eval.run_questions import write_questions
from hyporag.eval.run_rows import current_of
from hyporag.foundation.errors import BackendError, HyporagError, RunFailedError
from hyporag.lm.client import explain_lm_error
from hyporag.questions.records import question_fingerprint


def question_record(example: dspy.Example) -> dict:
    record = {"id": example.id, "question": example.question, "options": dict(example.options),
              "gold": example.answer, "fingerprint": question_fingerprint(example)}
    group = example.get("group") if hasattr(example, "get") else None
    return {**record, "group": str(group)} if group not in (None, "") else record


def result_row(example: dspy.Example, method: str, prediction: dspy.Prediction | None, seconds: float,
               error: str | None = None) -> dict[str, Any]:
    """The per-question JSONL record, as `ResultRow` defines it."""
    cost = getattr(prediction, "cost", None) or {}
    answer = getattr(prediction, "answer", None)
    passages = getattr(prediction, "passages", None) or []
    row = {
        "question_id": example.id,
        "method": method,
        "question_fingerprint": question_fingerprint(example),
        "answer": answer,
        "gold": example.answer,
        "correct": answer == example.answer,
        "parse_failure": bool(getattr(prediction, "parse_failure", False)),
        "answer_reply": getattr(prediction, "answer_reply", None),
        "answer_reasoning": getattr(prediction, "answer_reasoning", None),
        "option_logprobs": getattr(prediction, "option_logprobs", None),
        "option_logprob_status": getattr(prediction, "option_logprob_status", None),
        **decision_measures(getattr(prediction, "option_logprobs", None),
                            getattr(prediction, "option_logprob_status", None), example.answer),
        "error": error,
        "passage_ids": [p["id"] for p in passages],
        "passage_scores": [round(float(p.get("score", 0.0)), 6) for p in passages],
        "passage_found_by": [list(p.get("found_by") or ()) for p in passages],  # which queries found each
        **(getattr(prediction, "reading", None) or {}),  # the answer mode's own fields (programs.answer_modes)
        "queries": getattr(prediction, "queries", None) or [],
        "hypothesis": getattr(prediction, "hypothesis", None),
        "hypothesis_option": getattr(prediction, "hypothesis_option", None),
        "fallbacks": dict(getattr(prediction, "fallbacks", None) or {}),  # kind -> why (or how often)
        "details": dict(getattr(prediction, "row_fields", None) or {}),  # the program's own fields
        "retrieval_sees_options": getattr(prediction, "retrieval_sees_options", None),
        "calls": cost.get("calls", 0),  # the question's own: replies served from DSPy's cache included
        "cache_hits": cost.get("cache_hits", 0),
        "input_tokens": cost.get("input_tokens", 0),
        "output_tokens": cost.get("output_tokens", 0),
        "processed_tokens": processed_of(cost),
        "cost_by_role": cost.get("by_role", {}),
        "seconds": round(seconds, 3),
    }
    # each passage's pull, derived from the readings the answer mode kept (as belief measures are from the answer)
    row["passage_pulls"] = passage_pulls(row.get("passage_readings") or [], row.get("closed_book"), example.answer)
    if passages:
        row.update(option_evidence(example.options, example.answer, [p["contents"] for p in passages]))
    return row


MALFORMED_REPLY_RETRIES = 3  # a question whose reply arrives cut short is asked again this often (cached calls free)


def malformed_reply(exc: BaseException) -> bool:
    """An HTTP 200 whose body is not a reply (cut short in transit, a proxy's page): the server was reached and will
    likely answer again, unlike a reply that says the request itself is wrong."""
    return isinstance(exc, LMError) and getattr(exc, "status", None) == 200


def run_one(program: Callable, example: dspy.Example, method: str, judge: Callable | None = None,
            metric: Callable | None = None, debug: bool = False) -> dict[str, Any]:
    """One question through one program: its row, judged and scored (`metric`, as DSPy's metrics) when asked."""
    started, retried = time.perf_counter(), 0
    try:
        while True:
            try:
                prediction = program(question=example.question, options=example.options)
                break
            except LMError as exc:  # a reply cut short in transit is a transport fault: asked again, as a 500 is
                if not malformed_reply(exc) or retried >= MALFORMED_REPLY_RETRIES:
                    raise
                retried += 1
                time.sleep(0.2 * retried)
    except (LMTransportError, LMAuthError) as exc:  # systemic: every further question would fail the same way
        raise BackendError(f"LM backend failed after retries: {explain_lm_error(exc)}; finished rows are kept, "
                           "re-run to resume") from exc
    except HyporagError:
        raise  # a setting the user must fix: it would fail every question alike
    except Exception as exc:  # a failing question is recorded, never fatal to the run
        if debug:
            traceback.print_exc()
        detail = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        row = result_row(example, method, None, time.perf_counter() - started, error=detail)
        row["malformed_replies"] = retried + malformed_reply(exc)
        return {**row, "score": 0.0} if metric is not None else row
    row = result_row(example, method, prediction, time.perf_counter() - started)
    row["malformed_replies"] = retried
    if metric is not None:
        row["score"] = float(metric(example, prediction))
    if judge is not None and prediction.passages:
        judge_started = time.perf_counter()
        try:
            verdict = judge(question=example.question, options=example.options, answer=example.answer,
                            passages=prediction.passages)
            row.update(judge_label=verdict.label, judge_reason=verdict.reason, judge_calls=verdict.cost["calls"],
                       judge_input_tokens=verdict.cost["input_tokens"],
                       judge_output_tokens=verdict.cost["output_tokens"],
                       judge_seconds=round(time.perf_counter() - judge_started, 3))
        except Exception as exc:  # the answer stands; only the label is missing
            row["judge_error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    return row


def answer_all(programs: dict[str, Callable], examples: Sequence[dspy.Example], threads: int = 1,
               judge: Callable | None = None, metric: Callable | None = None,
               sink: Callable[[dict], None] | None = None, skip: set[tuple[str, str]] = frozenset(),
               progress: bool = False, debug: bool = False, desc: str = "eval",
               until: Callable[[], bool | Collection[str]] | None = None) -> list[dict[str, Any]]:
    """Every (method, question) pair not in `skip` (pairs of question id and method), question by question
    across methods; returns the rows in completion order and hands each to `sink` as it finishes. With `until`,
    the questions are answered in order, `threads` at a time (every method each), and before each of them
    `until()` says whether to go on: True stops (a resumed run that is decided asks nothing), False goes on, and a
    collection of method names goes on with those alone (a race drops a candidate; none left stops)."""
    from tqdm import tqdm

    todo = [(m, e) for e in examples for m in programs if (e.id, m) not in skip]
    total = len(examples) * len(programs)
    bar = tqdm(total=total, initial=total - len(todo), desc=desc, unit="answer", disable=not progress)
    rows: list[dict[str, Any]] = []
    step = len(examples) if until is None else max(1, threads)
    active = set(programs)

    def answer(task: tuple[str, dspy.Example]) -> dict[str, Any]:
        return run_one(programs[task[0]], task[1], task[0], judge, metric, debug)

    try:
        for start in range(0, len(examples), step or 1):
            if until is not None:
                verdict = until()
                if verdict is True or (verdict is not False and verdict is not None and not set(verdict)):
                    break
                if verdict not in (False, None):
                    active = set(verdict)
            chunk = [(m, e) for e in examples[start:start + step] for m in programs
                     if m in active and (e.id, m) not in skip]
            for _, row in run_parallel(answer, chunk, threads):
                ResultRow.check(row)
                rows.append(row)
                if sink is not None:
                    sink(row)
                bar.update(1)
    finally:  # the bar ends its line, so an error after it stands on a line of its own
        bar.close()
    return rows


@dataclass
class RunRecord:
    """What `record_run` wrote: the run directory, its methods (the earlier ones of the directory too), and the rows
    this call's programs hold now (to refuse a method all of whose questions errored)."""

    out: Path
    methods: list[str]
    rows: list[dict[str, Any]]
    questions: dict[str, dict[str, Any]]


class StopRule(Protocol):
    """What `eval --until-decided` gives the engine: asked before each question whether to stop (on the run's
    record and current rows), and, once the run has stopped, what run.json says of where and why."""

    def __call__(self, settings: dict[str, Any], rows: list[dict]) -> bool: ...

    def record(self, settings: dict[str, Any], rows: list[dict]) -> dict[str, Any]: ...


def record_run(programs: dict[str, Callable], examples: Sequence[dspy.Example], out_dir: str | Path,
               settings: dict[str, Any], threads: int = 1, progress: bool = True,
               judge: Callable | None = None, debug: bool = False, until: StopRule | None = None,
               finish: Callable[[dict[str, Any] | None], dict[str, Any]] | None = None) -> RunRecord:
    """Answer every (question, method) pair not already in `out_dir` and keep the record: rows, the questions
    asked (questions.jsonl) and the settings (run.json, through the store alone). `until` ends the run early,
    asked before each question in order (`eval --until-decided`), and records the stop; `finish(previous record)`
    gives run.json's last changes however the session ends (what each endpoint served)."""
    out_dir = Path(out_dir)
    fingerprints = {e.id: question_fingerprint(e) for e in examples}
    # the questions this run answers, by content: a report drawn from the directory skips rows of older versions
    settings = {**settings, "question_fingerprints": fingerprints}
    with ResultsStore(out_dir, settings) as store:
        stale = [r for r in store.latest() if r["question_id"] in fingerprints and r["method"] in programs
                 and r.get("question_fingerprint") != fingerprints[r["question_id"]]]
        if stale:
            print(f"{out_dir}: {len(stale)} stored row(s) answered a question that has changed since (text, options "
                  f"or gold; first {stale[0]['question_id']}); answering them again", file=sys.stderr)
        write_questions(out_dir, map(question_record, examples))  # the run holds what it asks: view needs no dataset
        skip = store.done(fingerprints)
        if judge is not None:  # rows finished before the judge was asked for are answered again, judged this time
            unjudged = {(r["question_id"], r["method"]) for r in store.latest()
                        if (r["question_id"], r["method"]) in skip and r.get("passage_ids")
                        and r.get("judge_label") is None and not r.get("judge_error")}
            if unjudged:
                print(f"{out_dir}: {len(unjudged)} finished row(s) have no judge label (finished without --dur); "
                      "answering them again with the judge (cached LM calls cost nothing)", file=sys.stderr)
                skip = skip - unjudged
        try:
            answer_all(programs, examples, threads, judge=judge, sink=store.append, skip=skip, progress=progress,
                       debug=debug, until=(lambda: until(store.settings, current_of(store.settings, store.latest())))
                       if until is not None else None)
            if until is not None:
                store.update(until.record(store.settings, current_of(store.settings, store.latest())))
        finally:
            if finish is not None:
                store.update(finish(store.previous))
        rows = [r for r in store.latest() if r["method"] in programs
                and r.get("question_fingerprint") == fingerprints.get(r["question_id"])]
        methods = list(store.settings.get("methods") or programs)
    questions = {e.id: {"question": e.question, "options": dict(e.options)} for e in examples}
    return RunRecord(out_dir, methods, rows, questions)


def refuse_all_errored(rows: list[dict], out_dir: Path) -> None:
    """Raise when some method has rows and every one of them errored, naming the first error."""
    by_method: dict[str, list[ResultRow]] = {}
    for row in map(ResultRow.of, rows):
        by_method.setdefault(row.method, []).append(row)
    failed = {m: items for m, items in by_method.items() if items and all(r.error for r in items)}
    if failed:
        method, items = next(iter(failed.items()))
        raise RunFailedError(f"every question of {', '.join(failed)} errored (first, {method} on "
                             f"{items[0].question_id}: {items[0].error}); rows kept in {out_dir}; "
                             "fix the cause and re-run the same command (errored rows are retried)")
