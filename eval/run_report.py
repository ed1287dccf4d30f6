"""Write the side-by-side report of a results directory: summary.json/.md/.csv and PNG plots."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from hyporag.eval import decision
from hyporag.eval import paper_analyses as analysis
from hyporag.eval.decisions import against_rows_of, decisions_of
from hyporag.eval.echo import echo_rates
from hyporag.eval.measures import DEFAULT_DECIDING, REGISTRY
from hyporag.eval.packed import is_packed
from hyporag.eval.report_markdown import cell, markdown, power_cell  # noqa: F401 (the report's tables, re-exported)
from hyporag.eval.report_plots import plots
from hyporag.eval.run_questions import read_questions
from hyporag.eval.run_rows import current_rows
from hyporag.eval.summary import notes, summaries, summarize  # noqa: F401 (summaries re-exported)
from hyporag.foundation.atomic import write_json_atomic, write_text_atomic
from hyporag.foundation.errors import HyporagError


def lead_of(settings: dict) -> str:
    """The measure the fixed-n tables lead with: the run's deciding measure, or p(gold) where that is accuracy
    (which has its own McNemar column) or unnamed."""
    named = (settings.get("sequential") or {}).get("decide_on")
    return named if named in REGISTRY and named != "accuracy" else DEFAULT_DECIDING


def build_report(rows: list[dict], settings: dict, method_order: list[str], groups: dict[str, str] | None = None,
                 all_rows: list[dict] | None = None, against_rows: list[dict] | None = None) -> dict:
    """Every table of a run, from its rows and settings alone; `groups` (question -> its dataset or `group`)
    groups the intervals (decision.grouping_of: clustered from ten groups, stratified below). The comparisons are
    read as the stop rule reads them (hyporag.eval.decisions), on `all_rows` (every current row of a partial run:
    each pair on what its two sides answered; default `rows`) and, for a gated run, `against_rows`."""
    order = {m: i for i, m in enumerate(method_order)}
    lead = lead_of(settings)
    summary = sorted(summarize(rows), key=lambda s: order.get(s.method, 99))
    durs = analysis.dur(rows)
    baseline = settings.get("baseline") or "rag"  # the run's setting; older runs compared against rag
    paired = analysis.paired_against(rows, baseline)
    evidence = analysis.evidence_rates(rows)
    means = decision.method_means(rows)
    margins = decision.paired_measures(rows, baseline, int(settings.get("seed") or 0), groups, lead)
    sequences = decisions_of(settings, all_rows if all_rows is not None else rows, against_rows,
                             {s.method: s.to_dict() for s in summary})
    lift = decision.context_lift(rows, "cot", lead)
    echoes = echo_rates(all_rows if all_rows is not None else rows)
    for s in summary:
        m = s.method
        paired_lead = (margins.get(m) or {}).get(lead) or {}
        mean = means.get(m) or {}
        s.with_probabilities = mean.get("with_probabilities", 0)
        s.damaged_distributions = (mean.get("statuses") or {}).get("damaged", 0)
        s.log_p_gold, s.p_gold, s.margin = mean.get(decision.LEAD), mean.get("p_gold"), mean.get("margin")
        s.vs_rag_lead_difference, s.vs_rag_lead_p_value = paired_lead.get("mean"), paired_lead.get("wilcoxon_p")
        s.lift_over_cot, s.lift_positive = (lift.get(m) or {}).get("mean"), (lift.get(m) or {}).get("positive")
        s.dur = durs.get(m, {}).get("dur")
        s.vs_rag_difference, s.vs_rag_p_value = paired.get(m, {}).get("difference"), paired.get(m, {}).get("p_value")
        s.gold_in_context = evidence.get(m, {}).get("gold_in_context")
        comparison = (sequences.get("comparisons") or {}).get(m) or {}
        s.sequence_outcome, s.decided_at = comparison.get("outcome"), comparison.get("decided_at")
        s.distractor_in_context = evidence.get(m, {}).get("distractor_in_context")
        echo = echoes.get(m) or {}
        s.echo, s.hypothesis_names_gold, s.pull_closed_book = (echo.get("echo"), echo.get("names_gold"),
                                                               echo.get("pull_closed_book"))
    return {
        "settings": settings,
        "methods": [s.to_dict() for s in summary],
        "paired_vs_rag": paired,
        "dur": durs,
        "dur_paired_vs_rag": analysis.paired_against(rows, baseline, analysis.decision_useful) if durs else {},
        "baseline": baseline,
        "utility_conditioned_accuracy": analysis.utility_conditioned_accuracy(rows, "cot"),
        "top5_overlap_on_disagreements": analysis.disagreement_overlap(rows, 5),
        "evidence": evidence,
        "cost_by_role": analysis.cost_by_role(rows),
        "mechanism": analysis.mechanism(rows),
        "parse_rules": {m: p.get("parse", "strict") for m, p in (settings.get("program") or {}).items()},
        "notes": notes(summary),
        "decision": {"lead": lead, "lead_label": REGISTRY[lead].label, "log_p_floor": decision.LOG_P_FLOOR,
                     "means": means,
                     "paired_vs_rag": margins, "lift_over_cot": lift},
        "sequential": sequences,
        "measures": {m.name: {"label": m.label, "higher_is_better": m.higher_is_better, "low": m.low, "high": m.high}
                     for m in REGISTRY.values()},
        "grouped_by": sorted(set(groups.values())) if groups and len(set(groups.values())) > 1 else None,
        "grouping": decision.grouping_of(list(groups.values()) if groups else None),
    }


def to_csv(summary: list[dict]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(summary[0].keys()) if summary else ["method"])
    writer.writeheader()
    writer.writerows(summary)
    return buffer.getvalue()


def write_report(rows: list[dict], settings: dict, method_order: list[str], out_dir: Path,
                 coverage: dict | None = None, all_rows: list[dict] | None = None,
                 against_rows: list[dict] | None = None, groups: dict[str, str] | None = None) -> dict:
    report = build_report(rows, settings, method_order, groups if groups is not None else groups_of(out_dir),
                          all_rows, against_rows)
    if coverage:
        report["coverage"] = coverage
    write_json_atomic(out_dir / "summary.json", report)
    write_text_atomic(out_dir / "summary.md", markdown(report))
    write_text_atomic(out_dir / "summary.csv", to_csv(report["methods"]))
    report["plots"] = [str(p) for p in plots(report, out_dir)]
    return report


def groups_of(out_dir: str | Path) -> dict[str, str]:
    """Each question's group (its dataset when several were joined, or a `group` column), from the run's own
    questions.jsonl."""
    return {q: record["group"] for q, record in read_questions(out_dir).items() if record.get("group")}


def report_from_dir(out_dir: str | Path, write_to: str | Path | None = None) -> dict:
    """Redraw a results directory's report from its rows, without an LM, even while its run is still appending.

    A partial run is reported on the questions every method has finished, so methods are compared on the same
    questions; the report says how many of the planned questions that is."""
    settings, rows, methods, coverage = current_rows(out_dir)
    every = rows
    if coverage:
        complete = set(coverage.pop("complete"))
        rows = [r for r in rows if r["question_id"] in complete]
    if write_to is None and is_packed(out_dir):
        raise HyporagError(f"{out_dir}: is a packed run (read-only, committed evidence); give the report another "
                           "directory (`hyporag report RUN --out DIR`)")
    target = Path(write_to or out_dir)
    target.mkdir(parents=True, exist_ok=True)
    return write_report(rows, settings, methods, target, coverage, every, against_rows_of(settings),
                        groups_of(out_dir))
