"""Every comparison a run directory holds, and its outcome: the one reading that the stop rule of `eval
--until-decided` makes before each question and that the report, the page and the gate print.

The comparisons are every method run.json holds against the run's baseline (or, when the run was gated with
`--against`, each method against itself in that run, paired by question content); alpha is split over all of them,
and each is paired on the questions its own two sides answered, so a method added later, or still running, never
changes another's pairing. Where the run stopped, run.json keeps each outcome at the stop (`sequential.at_stop`);
the reading of the rows now is set beside it wherever the two differ (a method added afterwards shares alpha).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hyporag.eval.comparisons import ALPHA, paired_sequences, run_order
from hyporag.eval.regression import compare_rows, order_of
from hyporag.eval.run_rows import current_rows
from hyporag.foundation.errors import HyporagError


def decisions_of(settings: dict[str, Any], rows: list[dict], against_rows: list[dict] | None = None,
                 costs: dict[str, dict] | None = None) -> dict[str, Any]:
    """The run's comparisons on `rows` (its current rows, every question each pair answered), with the rule run.json
    records: alpha, the deciding measure, the equivalence margins; `against_rows`: the gated run's rows."""
    rules = settings.get("sequential") or {}
    alpha, deltas, decide_on = rules.get("alpha", ALPHA), rules.get("deltas") or {}, rules.get("decide_on")
    methods = list(settings.get("methods") or dict.fromkeys(r["method"] for r in rows))
    if against_rows is not None:
        result = compare_rows(rows, against_rows, order_of(settings, rows), alpha, deltas, decide_on, methods)
        result["against"] = rules.get("against")
    else:
        result = paired_sequences(rows, settings.get("baseline") or "rag", run_order(settings, rows), alpha, deltas,
                                  costs, decide_on, methods=methods)
    for name, at_stop in (rules.get("at_stop") or {}).items():
        comparison = (result.get("comparisons") or {}).get(name)
        if comparison is not None and (at_stop.get("outcome"), at_stop.get("decided_at")) != (
                comparison["outcome"], comparison["decided_at"]):
            comparison["at_stop"] = at_stop
    return result


def against_rows_of(settings: dict[str, Any]) -> list[dict] | None:
    """The rows of the run a gated run was compared with (None when it was not gated)."""
    against = (settings.get("sequential") or {}).get("against")
    if not against:
        return None
    try:
        return current_rows(against)[1]
    except HyporagError as exc:  # the gated run moved or went: its comparisons cannot be redrawn, and say so
        raise HyporagError(f"this run was gated against {against}, which cannot be read now ({exc}); its "
                           "comparisons need it") from None


def decisions_in(run_dir: str | Path, costs: dict[str, dict] | None = None) -> dict[str, Any]:
    """`decisions_of` a results directory as it is now (mid-run too)."""
    settings, rows, _, _ = current_rows(run_dir)
    return decisions_of(settings, rows, against_rows_of(settings), costs)
