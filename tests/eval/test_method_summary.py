"""summary.json's per-method line has one definition, `MethodSummary`: what the report writes is exactly its fields,
and a summary from an older run (fewer fields) still reads."""

from __future__ import annotations

from dataclasses import fields

from hyporag.eval.run_report import build_report, summaries
from hyporag.eval.summary import MethodSummary


def row(qid: str, method: str, correct: bool) -> dict:
    return {"question_id": qid, "method": method, "answer": "A" if correct else "B", "gold": "A",
            "correct": correct, "calls": 1, "seconds": 2.0}


def test_the_report_writes_exactly_the_typed_fields_and_old_summaries_read():
    rows = [row("1", "cot", True), row("2", "cot", False), row("1", "rag", True), row("2", "rag", True)]
    report = build_report(rows, {"seed": 0}, ["cot", "rag"])
    assert [list(s) for s in report["methods"]] == [[f.name for f in fields(MethodSummary)]] * 2
    rag = summaries(report)[1]
    assert (rag.method, rag.n, rag.accuracy, rag.calls_per_q, rag.seconds_per_q) == ("rag", 2, 1.0, 1.0, 2.0)
    assert rag.vs_rag_difference is None and summaries(report)[0].vs_rag_difference == -0.5  # rag is the baseline
    old = MethodSummary.of({"method": "rag", "n": 3, "accuracy": 0.5, "ci95_low": 0.1, "ci95_high": 0.9,
                            "parse_failures": 0, "errors": 0, "calls_per_q": 1.0, "seconds_per_q": 1.0})
    assert old.log_p_gold is None and old.with_probabilities == 0 and old.fallbacks == {}
