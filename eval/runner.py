"""Run several methods on the same questions, in threads, with a progress bar; resume what a killed run finished.

One failing question never stops the run: its row records the error and counts as wrong.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import dspy
from hyporag.eval.metrics import format_table, summarize
from hyporag.eval.results_store import ResultsStore


def result_row(example: dspy.Example, method: str, prediction: dspy.Prediction | None, seconds: float,
               error: str | None = None) -> dict[str, Any]:
    """The per-question JSONL record (also what the CI gate and reports read)."""
    cost = getattr(prediction, "cost", None) or {}
    answer = getattr(prediction, "answer", None)
    return {
        "question_id": example.id,
        "method": method,
        "answer": answer,
        "gold": example.answer,
        "correct": answer == example.answer,
        "parse_failure": bool(getattr(prediction, "parse_failure", False)),
        "error": error,
        "passage_ids": [p["id"] for p in getattr(prediction, "passages", None) or []],
        "queries": getattr(prediction, "queries", None) or [],
        "hypothesis": getattr(prediction, "hypothesis", None),
        "retrieval_sees_options": getattr(prediction, "retrieval_sees_options", None),
        "calls": cost.get("calls", 0),
        "input_tokens": cost.get("input_tokens", 0),
        "output_tokens": cost.get("output_tokens", 0),
        "cost_by_role": cost.get("by_role", {}),
        "seconds": round(seconds, 3),
    }


def run_one(program: Callable, example: dspy.Example, method: str) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        prediction = program(question=example.question, options=example.options)
    except Exception as exc:  # a failing question is recorded, never fatal to the run
        detail = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        if getattr(run_one, "debug", False):
            traceback.print_exc()
        return result_row(example, method, None, time.perf_counter() - started, error=detail)
    return result_row(example, method, prediction, time.perf_counter() - started)


def run_evaluation(programs: dict[str, Callable], examples: Sequence[dspy.Example], out_dir: str | Path,
                   settings: dict[str, Any], threads: int = 1, progress: bool = True) -> list[dict]:
    """Evaluate every (question, method) pair not already in `out_dir`; returns the per-method summary."""
    from tqdm import tqdm

    from hyporag.atomic import write_json_atomic, write_text_atomic

    out_dir = Path(out_dir)
    with ResultsStore(out_dir, settings) as store:
        done = store.done()
        todo = [(m, e) for e in examples for m in programs if (e.id, m) not in done]
        bar = tqdm(total=len(examples) * len(programs), initial=len(examples) * len(programs) - len(todo),
                   desc="eval", unit="answer", disable=not progress)
        with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
            futures = [pool.submit(run_one, programs[m], e, m) for m, e in todo]
            for future in as_completed(futures):
                store.append(future.result())
                bar.update(1)
        bar.close()
        wanted = {(e.id, m) for e in examples for m in programs}
        rows = [r for r in store.rows if (r["question_id"], r["method"]) in wanted]
        order = {m: i for i, m in enumerate(programs)}
        summary = sorted(summarize(rows), key=lambda s: order.get(s["method"], 99))
        write_json_atomic(out_dir / "summary.json", {"settings": settings, "methods": summary})
        write_text_atomic(out_dir / "summary.md", format_table(summary) + "\n")
    return summary
