"""Run several methods on the same questions, in threads, with a progress bar; resume what a killed run finished.

One failing question never stops the run: its row records the error and counts as wrong. The judge (when on)
labels each question's final context in the same worker, so a resumed run never re-judges finished rows.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import dspy
from dspy.utils.exceptions import LMAuthError, LMTransportError

from hyporag.errors import BackendError, RunFailedError
from hyporag.eval.evidence import option_evidence
from hyporag.eval.parallel import run_parallel
from hyporag.eval.report import write_report
from hyporag.eval.results_store import ResultsStore
from hyporag.programs.lm import explain_lm_error

DEBUG = False


def result_row(example: dspy.Example, method: str, prediction: dspy.Prediction | None, seconds: float,
               error: str | None = None) -> dict[str, Any]:
    """The per-question JSONL record (also what the CI gate and reports read)."""
    cost = getattr(prediction, "cost", None) or {}
    answer = getattr(prediction, "answer", None)
    passages = getattr(prediction, "passages", None) or []
    row = {
        "question_id": example.id,
        "method": method,
        "answer": answer,
        "gold": example.answer,
        "correct": answer == example.answer,
        "parse_failure": bool(getattr(prediction, "parse_failure", False)),
        "query_parse_failures": int(getattr(prediction, "query_parse_failures", None) or 0),
        "contrast_fallback": getattr(prediction, "contrast_fallback", None),
        "error": error,
        "passage_ids": [p["id"] for p in passages],
        "queries": getattr(prediction, "queries", None) or [],
        "hypothesis": getattr(prediction, "hypothesis", None),
        "retrieval_sees_options": getattr(prediction, "retrieval_sees_options", None),
        "calls": cost.get("calls", 0),
        "input_tokens": cost.get("input_tokens", 0),
        "output_tokens": cost.get("output_tokens", 0),
        "cost_by_role": cost.get("by_role", {}),
        "seconds": round(seconds, 3),
    }
    if passages:
        row.update(option_evidence(example.options, example.answer, [p["contents"] for p in passages]))
    return row


def run_one(program: Callable, example: dspy.Example, method: str, judge: Callable | None = None) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        prediction = program(question=example.question, options=example.options)
    except (LMTransportError, LMAuthError) as exc:  # systemic: every further question would fail the same way
        raise BackendError(f"LM backend failed after retries: {explain_lm_error(exc)}; finished rows are kept, "
                           "re-run to resume") from exc
    except Exception as exc:  # a failing question is recorded, never fatal to the run
        if DEBUG:
            traceback.print_exc()
        detail = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        return result_row(example, method, None, time.perf_counter() - started, error=detail)
    row = result_row(example, method, prediction, time.perf_counter() - started)
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


def run_evaluation(programs: dict[str, Callable], examples: Sequence[dspy.Example], out_dir: str | Path,
                   settings: dict[str, Any], threads: int = 1, progress: bool = True,
                   judge: Callable | None = None) -> dict:
    """Evaluate every (question, method) pair not already in `out_dir`; returns the report (summary per method)."""
    from tqdm import tqdm

    out_dir = Path(out_dir)
    with ResultsStore(out_dir, settings) as store:
        done = store.done()
        todo = [(m, e) for e in examples for m in programs if (e.id, m) not in done]
        total = len(examples) * len(programs)
        bar = tqdm(total=total, initial=total - len(todo), desc="eval", unit="answer", disable=not progress)
        try:
            for _, row in run_parallel(lambda task: run_one(programs[task[0]], task[1], task[0], judge), todo,
                                       threads):
                store.append(row)
                bar.update(1)
        finally:  # the bar ends its line, so an error after it stands on a line of its own
            bar.close()
        wanted = {(e.id, m) for e in examples for m in programs}
        rows = [r for r in store.latest() if (r["question_id"], r["method"]) in wanted]
        report = write_report(rows, settings, list(programs), out_dir)
    refuse_all_errored(rows, out_dir)
    return report


def refuse_all_errored(rows: list[dict], out_dir: Path) -> None:
    """Raise when some method has rows and every one of them errored, naming the first error."""
    by_method: dict[str, list[dict]] = {}
    for row in rows:
        by_method.setdefault(row["method"], []).append(row)
    failed = {m: items for m, items in by_method.items() if items and all(r.get("error") for r in items)}
    if failed:
        method, items = next(iter(failed.items()))
        raise RunFailedError(f"every question of {', '.join(failed)} errored (first, {method} on "
                             f"{items[0]['question_id']}: {items[0]['error']}); rows kept in {out_dir}; "
                             "fix the cause and re-run the same command (errored rows are retried)")
