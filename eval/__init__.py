"""Evaluation: run programs over questions into resumable result rows, and read, summarise and compare them.

The names below are the public API, imported lazily so that reading a run's rows needs neither DSPy nor torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "record_run": "hyporag.eval.engine",
    "answer_all": "hyporag.eval.engine",
    "run_one": "hyporag.eval.engine",
    "run_parallel": "hyporag.eval.parallel",
    "read_results": "hyporag.eval.results_store",
    "differing_settings": "hyporag.eval.run_compat",
    "ResultRow": "hyporag.eval.row",
    "processed_of": "hyporag.eval.row",
    "summarize": "hyporag.eval.summary",
    "wilson_interval": "hyporag.eval.summary",
    "paired_comparison": "hyporag.eval.mcnemar",
    "mcnemar_exact": "hyporag.eval.mcnemar",
    "COST_FIELDS": "hyporag.eval.paper_analyses",
    "evidence_rates": "hyporag.eval.paper_analyses",
    "mechanism": "hyporag.eval.paper_analyses",
    "option_evidence": "hyporag.eval.evidence",
    "cell": "hyporag.eval.run_report",
    "current_rows": "hyporag.eval.run_rows",
    "report_measures": "hyporag.eval.decision",
    "LEAD": "hyporag.eval.decision",
    "Measure": "hyporag.eval.measures",
    "REGISTRY": "hyporag.eval.measures",
    "register": "hyporag.eval.measures",
    "measure_named": "hyporag.eval.measures",
    "DEFAULT_DECIDING": "hyporag.eval.measures",
    "BettingTest": "hyporag.eval.betting_test",
    "decide_stream": "hyporag.eval.comparisons",
    "decisions_of": "hyporag.eval.decisions",
    "decisions_in": "hyporag.eval.decisions",
    "method_means": "hyporag.eval.decision",
    "paired_measures": "hyporag.eval.decision",
    "context_lift": "hyporag.eval.decision",
    "holm": "hyporag.eval.decision",
    "paired_continuous": "hyporag.eval.decision",
    "echo_rates": "hyporag.eval.echo",
    "questions_for_power": "hyporag.eval.decision",
    "questions_for_power_mcnemar": "hyporag.eval.decision",
    "by_method": "hyporag.eval.paper_analyses",
    "paired_values": "hyporag.eval.comparisons",
    "run_order": "hyporag.eval.comparisons",
    "compare_sequences": "hyporag.eval.comparisons",
    "by_fingerprint": "hyporag.eval.regression",
    "order_of": "hyporag.eval.regression",
    "BettingCS": "hyporag.eval.sequential",
    "PULL_FLOOR": "hyporag.eval.pulls",
    "pull_shares": "hyporag.eval.pulls",
    "TIE_BREAK": "hyporag.eval.dspy_metrics",
    "report_from_dir": "hyporag.eval.run_report",
    "pack": "hyporag.eval.packed",
    "unpack": "hyporag.eval.packed",
    "read_bytes": "hyporag.eval.packed",  # a file of a run, plain or packed
    "write_view": "hyporag.eval.viewer",
    "serve_view": "hyporag.eval.viewer",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'hyporag.eval' has no attribute {name!r}")
