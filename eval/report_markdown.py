"""A run's report as Markdown (summary.md, what `hyporag eval` and `report` print): the summary table, the paired
fixed-n tables, the comparisons as the stop rule reads them, and the mechanism and cost tables, each drawn from the
report dict alone (hyporag.eval.run_report builds it)."""

from __future__ import annotations

from hyporag.eval.measures import REGISTRY
from hyporag.eval.summary import format_table, notes, summaries

POWER_SHOWN_UP_TO = 100_000  # beyond this a count only says "no study of this kind would see it"


def power_cell(questions: int | None) -> str:
    """The questions 80% power would need: a count up to POWER_SHOWN_UP_TO, beyond it just that (a mean difference
    near 0 makes the formula's count astronomically large and falsely precise)."""
    return f"> {POWER_SHOWN_UP_TO:,}" if questions is not None and questions > POWER_SHOWN_UP_TO else cell(
        questions, "{:d}")


def cell(value: float | None, pattern: str = "{:.3f}") -> str:
    """A table cell: the value formatted, or a dash where there is none (no judge, no baseline, ...)."""
    return "–" if value is None else pattern.format(value)


def markdown(report: dict) -> str:
    lines = coverage_lines(report.get("coverage"))
    summary = summaries(report)
    lines += [format_table(summary), *[f"\n{note}" for note in notes(summary)], "",
             f"| method | DUR | Δ vs {report.get('baseline', 'rag')} | p (McNemar) | gold in ctx | distractor in ctx |",
             "|---|---:|---:|---:|---:|---:|"]
    for s in summary:
        lines.append(f"| {s.method} | {cell(s.dur)} | {cell(s.vs_rag_difference, '{:+.3f}')} | "
                     f"{cell(s.vs_rag_p_value)} | {cell(s.gold_in_context)} | {cell(s.distractor_in_context)} |")
    lines += decision_lines(report) + sequence_lines(report)
    if report["utility_conditioned_accuracy"]:
        lines += ["", "| method | label | n | accuracy | Δ vs cot |", "|---|---|---:|---:|---:|"]
        for method, labels in report["utility_conditioned_accuracy"].items():
            for label, v in labels.items():
                lines.append(f"| {method} | {label} | {v['n']} | {v['accuracy']:.3f} | "
                             f"{cell(v.get('delta_vs_cot'), '{:+.3f}')} |")
    if report["top5_overlap_on_disagreements"]:
        lines += ["", "| method a | method b | disagreements | mean top-5 Jaccard | no shared passage |",
                  "|---|---|---:|---:|---:|"]
        for o in report["top5_overlap_on_disagreements"]:
            lines.append(f"| {o['a']} | {o['b']} | {o['disagreements']} | {o['mean_jaccard']:.3f} | "
                         f"{cell(o.get('no_shared'))} |")
    if report.get("mechanism"):
        lines += ["", "| method | hypotheses naming an option | names the gold option | answer follows it | "
                  "wrong hypotheses | answer overturns to gold |", "|---|---:|---:|---:|---:|---:|"]
        for method, m in report["mechanism"].items():
            lines.append(f"| {method} | {m['n']} | {m['hypothesis_gold']:.3f} | {m['answer_follows']:.3f} | "
                         f"{m['wrong_hypotheses']} | {cell(m['overturned_to_gold'])} |")
    lines += echo_lines(summary)
    rules = report.get("parse_rules") or {}
    if rules:
        lines += ["", "Unparseable answers: " + "; ".join(
            f"{rule} ({'scored wrong' if rule == 'strict' else 'scored as A, MIRAGE'}) for "
            + ", ".join(m for m, r in rules.items() if r == rule) for rule in sorted(set(rules.values()))) + "."]
    engine = (report.get("settings") or {}).get("bm25_engine")
    if engine:  # two engines rank differently: a table says which one its passages came from
        search = report["settings"].get("bm25_search") or "exact"
        lines += ["", f"BM25 engine: {engine} ({report['settings'].get('retriever')} retrieval, {search} search)."]
    if report.get("cost_by_role"):
        lines += ["", "| method | role | calls/q | in tok/q sent | processed | out tok/q | s/q |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        for method, roles in report["cost_by_role"].items():
            for role, c in roles.items():
                lines.append(f"| {method} | {role} | {c['calls']:.2f} | {c['input_tokens']:.0f} | "
                             f"{cell(c.get('processed_tokens'), '{:.0f}')} | {c['output_tokens']:.0f} | "
                             f"{cell(c['seconds'] or None, '{:.1f}')} |")
    return "\n".join(lines) + "\n"


def coverage_lines(coverage: dict | None) -> list[str]:
    """A partial run's own table: each method's rows so far, before the paired tables of the questions all
    finished."""
    if not coverage:
        return []
    lines = [f"**Partial run**: {coverage['questions_complete']} of {coverage['questions_planned']} questions have "
             "every method finished; the tables after this one cover only those.", "",
             "| method | rows so far | errored | accuracy on its own rows so far (not paired) |",
             "|---|---:|---:|---:|"]
    for method, p in (coverage.get("per_method") or {}).items():
        lines.append(f"| {method} | {p['rows']} of {coverage['questions_planned']} | {p['errors']} | "
                     f"{cell(p['accuracy'])} |")
    return [*lines, ""]


def echo_lines(summary: list) -> list[str]:
    """Does retrieval follow the reader's own answer, or the options it is torn between (eval.echo)?"""
    escaping = [s for s in summary if s.echo is not None or s.hypothesis_names_gold is not None]
    if not escaping:
        return []
    lines = ["", "| method | hypothesis names only the closed-book answer (echo) | gold among its options | "
             "questions retrieved | passages pulling toward the closed-book answer |", "|---|---:|---:|---:|---:|"]
    for s in escaping:
        lines.append(f"| {s.method} | {cell(s.echo)} | {cell(s.hypothesis_names_gold)} | "
                     f"{cell(s.retrieved_share if s.retrieved_share is not None else 1.0)} | "
                     f"{cell(s.pull_closed_book)} |")
    return lines


def decision_lines(report: dict) -> list[str]:
    """The decision-margin table: the reader's belief in the gold option, paired against rag (lead measure and
    accuracy side by side, with the questions 80% power would need) and the lift over cot."""
    info = report.get("decision") or {}
    summary = summaries(report)
    if not any(s.with_probabilities for s in summary):
        return ["", "Option probabilities: none in this run (the backend returned no logprobs, or rows predate "
                "them); margin and lift are shown as –."]
    paired = info.get("paired_vs_rag") or {}
    grouping = report.get("grouping") or ("clustered" if report.get("clustered_by") else None)  # older runs: clustered
    clustered = f", {grouping} by dataset" if grouping else ""
    label = info.get("lead_label") or "log p_gold"
    lines = ["", f"| method | rows with probabilities | log p_gold (clipped at {info.get('log_p_floor')}) | p_gold | "
             f"margin | Δ {label} vs {report.get('baseline', 'rag')} (95% CI{clustered}) | "
             f"Wilcoxon p (Holm) | McNemar p (Holm) | questions for 80% power: {label} / accuracy | lift over cot "
             f"({label}) | lift > 0 |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in summary:
        lead = (paired.get(s.method) or {}).get(info.get("lead")) or {}
        acc = (paired.get(s.method) or {}).get("accuracy") or {}
        interval = (f"{lead['mean']:+.3f} ({lead['ci95_low']:+.2f}–{lead['ci95_high']:+.2f})"
                    if lead.get("mean") is not None else "–")
        lines.append(f"| {s.method} | {s.with_probabilities} of {s.n} | {cell(s.log_p_gold)} | "
                     f"{cell(s.p_gold)} | {cell(s.margin)} | {interval} | "
                     f"{cell(lead.get('wilcoxon_p'))} ({cell(lead.get('wilcoxon_p_holm'))}) | "
                     f"{cell(acc.get('mcnemar_p'))} ({cell(acc.get('mcnemar_p_holm'))}) | "
                     f"{power_cell(lead.get('n_for_power'))} / "
                     f"{power_cell(acc.get('n_for_power'))} | {cell(s.lift_over_cot, '{:+.3f}')} | "
                     f"{cell(s.lift_positive, '{:.2f}')} |")
    damaged = [s for s in summary if s.damaged_distributions]
    if damaged:
        lines.append("\nRows whose stored option distribution is not one (a letter missing, a log probability above 0, "
                     "probabilities not summing to 1), left out of every belief measure: "
                     + ", ".join(f"{s.method} {s.damaged_distributions}" for s in damaged) + ".")
    if not info.get("lift_over_cot"):
        lines.append("\nLift over cot needs `cot` in the run (the same reader without retrieval).")
    labelled = {m: e["by_label"] for m, e in (info.get("lift_over_cot") or {}).items() if e.get("by_label")}
    if labelled:  # the judge's label against the reader's own movement: do they agree?
        lines += ["", "Mean lift over cot per judge label (n): " + "; ".join(
            f"{m}: " + ", ".join(f"{label} {v['mean']:+.2f} ({v['n']})" for label, v in by.items())
            for m, by in labelled.items()) + "."]
    return lines


def sequence_lines(report: dict) -> list[str]:
    """The comparisons as the stop rule reads them (valid however often they are read): each decided on one measure
    by a betting test ("better"/"worse") and a confidence sequence ("equivalent" and the band), with the question
    it was decided at, where an earlier outcome was refined, the outcome at the run's stop where it differs, the
    other measures beside it (not deciding), and what a fixed-n test of 80% power would have needed."""
    info = report.get("sequential") or {}
    comparisons = info.get("comparisons") or {}
    if not comparisons:
        return []

    def band(entry: dict) -> str:
        if entry.get("lower") is None:
            return "–"
        return f"{entry['mean']:+.3f} ({entry['lower']:+.2f} to {entry['upper']:+.2f})"

    against = info.get("against")
    deciding = sorted({REGISTRY[c["by"]].label for c in comparisons.values() if c.get("by") in REGISTRY})
    beside = [m for m in REGISTRY.values() if m.name not in {c.get("by") for c in comparisons.values()}]
    margins = ", ".join(f"±{d:g} {REGISTRY[n].label}" for n, d in (info.get("deltas") or {}).items() if n in REGISTRY)
    lines = ["", f"Anytime-valid comparison with {'itself in ' + against if against else info.get('baseline')}, "
             f"decided on {', '.join(deciding) or '–'}: a betting test says better or worse and a confidence "
             f"sequence says equivalent (inside {margins or 'the margin'}), valid however often read (Waudby-Smith & "
             f"Ramdas 2024); alpha {info['alpha']:g}, {info['split']} ({info['alpha_each']:.4f} each).", "",
             "| method | outcome | decided at question | by | Δ deciding measure (sequence) | "
             + " | ".join(f"Δ {m.label} (beside, not deciding)" for m in beside)
             + " | fixed-n test at 80% power: questions / LM calls / s |",
             "|---|---|---:|---|---:|" + "---:|" * len(beside) + "---:|"]
    notes_after = []
    for method, c in comparisons.items():
        fixed = c.get("fixed_n") or {}
        cost = (f"{fixed['questions']} / {fixed['calls']:,} / {fixed['seconds']:,.0f}" if fixed.get("calls")
                is not None else "–")
        others = " | ".join(band(c.get("beside", {}).get(m.name) or {}) for m in beside)
        lines.append(f"| {method} | {c['outcome']} | {cell(c.get('decided_at'), '{:d}')} | {c.get('by') or '–'} | "
                     f"{band(c)} | {others} | {cost} |")
        if len(c.get("history") or []) > 1:
            first = c["history"][0]
            notes_after.append(f"{method}: {first['outcome']} at question {first['question']}, then {c['outcome']} "
                               f"at {c['decided_at']} (both hold: the difference is real and inside the margin)")
        if c.get("at_stop"):
            stop = c["at_stop"]
            notes_after.append(f"{method}: {stop['outcome']} at the run's stop (question "
                               f"{stop.get('decided_at') or '–'}), {c['outcome']} read now (a method added since "
                               "shares alpha)")
        if c.get("why_measure"):
            notes_after.append(f"{method}: {c['why_measure']}")
    return lines + ([""] + [f"- {n}." for n in notes_after] if notes_after else [])
