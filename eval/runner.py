"""Run several methods on the same questions, in threads, with a progress bar; resume what a killed run finished.

One failing question never stops the run: its row records the error and counts as wrong. The judge (when on)
labels each question's final context in the same worker, so a resumed run never re-judges finished rows.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import dspy

from hyporag.errors import RunFailedError
from hyporag.eval.evaluate import evaluate
from hyporag.eval.report import write_report
from hyporag.eval.results_store import ResultsStore
from hyporag.eval.row import ResultRow
from hyporag.eval.run_questions import question_record, write_questions
from hyporag.eval.viewer import write_view
from hyporag.questions.records import question_fingerprint


def run_evaluation(programs: dict[str, Callable], examples: Sequence[dspy.Example], out_dir: str | Path,
                   settings: dict[str, Any], threads: int = 1, progress: bool = True,
                   judge: Callable | None = None, debug: bool = False) -> dict:
    """Evaluate every (question, method) pair not already in `out_dir`; returns the report (summary per method)."""
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
        evaluate(programs, examples, threads, judge=judge, sink=store.append, skip=skip, progress=progress,
                 debug=debug)
        rows = [r for r in store.latest() if r["method"] in programs
                and r.get("question_fingerprint") == fingerprints.get(r["question_id"])]
        report = write_report(rows, settings, list(programs), out_dir)
        questions = {e.id: {"question": e.question, "options": dict(e.options)} for e in examples}
        report["view"] = str(write_view([out_dir], questions=questions))
    refuse_all_errored(rows, out_dir)
    return report


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
