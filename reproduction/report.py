"""A paper's table beside ours: every setting that differs from the paper flagged in the header, our numbers with
n, 95% intervals and paired tests, and the paper's stored figures (with where each is stated) in their own column.

Input is one report (eval/run_report.py) per grid cell, so a table can be redrawn from results directories at any time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hyporag.eval.run_report import cell
from hyporag.eval.summary import MethodSummary, wilson_interval
from hyporag.foundation.judge_labels import LABELS
from hyporag.programs.registry import METHODS
from hyporag.reproduction.paper_tables import PaperTable, figures, paper


@dataclass(frozen=True)
class Cell:
    """One grid cell that ran: a dataset under one of the table's settings, with its report."""

    dataset: str
    variant: str
    report: dict
    dataset_size: int | None = None


def _paper_value(table: PaperTable, dataset: str, method: str, metric: str, baseline: str | None = None) -> str:
    for f in figures(table.name):
        if (f["method"] == method and f["metric"] == metric and f["dataset"] in (dataset, "*")
                and f.get("baseline") in (None, baseline)):
            value = f["value"]
            return f"{value:+.3f}" if metric.startswith("delta") else str(value)
    return "–"


def _distinct(values: list[Any]) -> str:
    unique = list(dict.fromkeys(str(v) for v in values if v is not None))
    return ", ".join(unique) if unique else "?"


def setting_flags(table: PaperTable, cells: list[Cell], corpus: str) -> tuple[list[str], list[str]]:
    """(differs, same): each a 'setting: ours vs paper' line, for the header."""
    theirs = paper(table.paper)["settings"]
    settings = [c.report["settings"] for c in cells]
    programs = [p for s in settings for p in (s.get("effective") or s.get("program") or {}).values()]
    lms = [f"{role} {spec}" for s in settings for role, spec in (s.get("lms") or {}).items()
           if role != "judge" or s.get("dur")]
    ours = {
        "corpus": corpus,
        "retriever": _distinct([s.get("retriever") for s in settings]),
        "model": _distinct(lms),
        "budget": _distinct([p.get("budget") for p in programs if _retrieves(p.get("method"))]),
        "parse": _distinct([p.get("parse") for p in programs]),
        "protocol": _distinct([p.get("protocol") for p in programs]),
    }
    own_k = [p.get("per_query_k") for p in programs if p.get("method") == table.paper and "per_query_k" in p]
    if own_k:  # the paper's own method retrieves k per query (HCQR's three queries)
        ours["per_query_k"] = _distinct(own_k)
    differs, same = [], []
    for name, value in ours.items():
        expected = theirs.get(name)
        if expected is None:
            differs.append(f"{name}: ours {value}, the paper's is not among the figures we hold")
        elif str(expected) == value:
            same.append(f"{name} {value}")
        else:
            differs.append(f"{name}: ours {value}; paper {expected}")
    for c in cells:
        n = MethodSummary.of(c.report["methods"][0]).n if c.report["methods"] else 0
        if c.dataset_size and n < c.dataset_size:
            differs.append(f"questions: {c.dataset} {n} of {c.dataset_size} (a slice, --limit)")
    return differs, same


def _render(header: list[str], rows: list[list[Any]], words: int) -> list[str]:
    """A markdown table: the first `words` columns left-aligned, the numbers after them right-aligned."""
    align = ["---"] * words + ["---:"] * (len(header) - words)
    return [f"| {' | '.join(header)} |", f"|{'|'.join(align)}|"] + [f"| {' | '.join(map(str, r))} |" for r in rows]


def _ci(low: float, high: float) -> str:
    return f"{low:.3f}–{high:.3f}"


def _accuracy_rows(table: PaperTable, cells: list[Cell]) -> list[str]:
    rows = [[c.dataset, c.variant, s.method, s.n, f"{s.accuracy:.3f}", _ci(s.ci95_low, s.ci95_high),
             cell(s.vs_rag_difference, "{:+.3f}"), cell(s.vs_rag_p_value),
             _paper_value(table, c.dataset, s.method, "delta_vs_rag")]
            for c in cells for s in map(MethodSummary.of, c.report["methods"])]
    return _render(["dataset", "setting", "method", "n", "accuracy", "95% CI", "Δ vs rag", "p (McNemar)",
                    "paper Δ vs rag"], rows, 3)


def _dur_rows(table: PaperTable, cells: list[Cell]) -> list[str]:
    rows = []
    for c in cells:
        paired = c.report.get("dur_paired_vs_rag") or {}
        for method, d in c.report["dur"].items():
            p = paired.get(method, {})
            rows.append([c.dataset, c.variant, method, d["judged"], f"{d['dur']:.3f}",
                         _ci(*wilson_interval(d["Entailed"] + d["Useful"], d["judged"])), d["Entailed"], d["Useful"],
                         d["NotUseful"], cell(p.get("difference"), "{:+.3f}"), cell(p.get("p_value")),
                         _paper_value(table, c.dataset, method, "dur")])
    return _render(["dataset", "setting", "method", "judged", "DUR", "95% CI", "Entailed", "Useful", "NotUseful",
                    "Δ DUR vs rag", "p (McNemar)", "paper DUR"], rows, 3)


def _utility_rows(table: PaperTable, cells: list[Cell]) -> list[str]:
    rows = []
    for c in cells:
        for method, labels in c.report["utility_conditioned_accuracy"].items():
            judged = sum(v["n"] for v in labels.values())
            rows += [[c.dataset, method, label, v["n"], f"{v['n'] / judged:.3f}", f"{v['accuracy']:.3f}",
                      cell(v.get("delta_vs_cot"), "{:+.3f}")]
                     for label in LABELS if (v := labels.get(label))]
    return _render(["dataset", "method", "label", "n", "share", "accuracy", "Δ vs cot (same questions)"], rows, 3)


def _overlap_rows(table: PaperTable, cells: list[Cell]) -> list[str]:
    rows = []
    for c in cells:
        for o in c.report["top5_overlap_on_disagreements"]:
            for side, other in (("a", "b"), ("b", "a")):
                method, baseline = o[side], o[other]
                if method == table.paper:  # the paper's method right, a baseline wrong
                    rows.append([c.dataset, c.variant, method, baseline, o[side + "_right_cases"],
                                 cell(o[side + "_right_no_shared"]), cell(o[side + "_right_mean_jaccard"]),
                                 _paper_value(table, "*", method, "cases", baseline),
                                 _paper_value(table, "*", method, "no_shared_top5", baseline)])
    return _render(["dataset", "setting", "method right", "baseline wrong", "cases", "no shared top-5",
                    "mean top-5 Jaccard", "paper cases", "paper no shared"], rows, 4)


def _cost_rows(table: PaperTable, cells: list[Cell]) -> list[str]:
    """Cost per question. The paper counts the query side (the calls that shape retrieval: CHR's one hypothesis
    call, HyDE's pseudo-documents), so those columns stand beside its figures; the totals add the answer step."""
    rows = []
    for c in cells:
        n = {s.method: s.n for s in map(MethodSummary.of, c.report["methods"])}
        for method, roles in c.report["cost_by_role"].items():
            def total(field: str, skip: tuple[str, ...], roles=roles) -> float:
                return sum(v[field] for role, v in roles.items() if role not in skip)

            query_side = ("answer", "judge")
            rows.append([c.dataset, method, n.get(method, 0), f"{total('calls', query_side):.2f}",
                         f"{total('output_tokens', query_side):.0f}", f"{total('calls', ('judge',)):.2f}",
                         f"{total('input_tokens', ('judge',)):.0f}", f"{total('output_tokens', ('judge',)):.0f}",
                         f"{total('seconds', ('judge',)):.1f}", _paper_value(table, "*", method, "calls_per_q"),
                         _paper_value(table, "*", method, "output_tokens_per_q")])
    return _render(["dataset", "method", "n", "query-side calls/q", "query-side output tok/q", "all calls/q",
                    "all input tok/q", "all output tok/q", "s/q", "paper calls/q", "paper output tok/q"], rows, 2)


ROWS = {"accuracy": _accuracy_rows, "dur": _dur_rows, "utility": _utility_rows, "overlap": _overlap_rows,
        "cost": _cost_rows}


def pooled_figures(table: PaperTable, cells: list[Cell]) -> list[str]:
    """The paper's figures that span the whole table (e.g. 'up to +10.4 points'), each beside ours."""
    lines = []
    for f in figures(table.name):
        if f["dataset"] != "*" or table.kind in ("overlap", "cost"):
            continue
        ours = "–"
        if f["metric"] == "max_delta_vs_next_best":
            gaps = [_gap_to_next_best(c.report, f["method"]) for c in cells]
            gaps = [g for g in gaps if g is not None]
            ours = f"{max(gaps):+.3f}" if gaps else "–"
        lines.append(f"- paper: {f['metric']} of {f['method']} = {f['value']} ({f['where']}); ours: {ours}")
    return lines


def _gap_to_next_best(report: dict, method: str) -> float | None:
    accuracy = {s.method: s.accuracy for s in map(MethodSummary.of, report["methods"])}
    others = [a for m, a in accuracy.items() if m != method]
    return accuracy[method] - max(others) if method in accuracy and others else None


def counted(cells: list[Cell]) -> list[str]:
    """What fell back or failed, per cell and method: a wrong result must not look like a right one."""
    lines = []
    for c in cells:
        parts = []
        for s in map(MethodSummary.of, c.report["methods"]):
            found = {name: n for name, n in (("unparseable answers", s.parse_failures), ("errors", s.errors)) if n}
            found.update({f"{kind} fallbacks": n for kind, n in (s.fallbacks or {}).items() if n})
            if found:
                parts.append(f"{s.method} " + ", ".join(f"{v} {k}" for k, v in found.items()))
        summary = "; ".join(parts) if parts else "no fallback, failure or error"
        lines.append(f"- {c.dataset} ({c.variant}): {summary}")
    return lines


def mechanism_lines(cells: list[Cell]) -> list[str]:
    """Does the answer overturn a wrong hypothesis? (the papers' claim), for every cell with hypotheses."""
    lines = []
    for c in cells:
        for method, m in (c.report.get("mechanism") or {}).items():
            overturned = "–" if m["overturned_to_gold"] is None else f"{m['overturned_to_gold']:.2f}"
            lines.append(f"- {c.dataset} ({c.variant}) {method}: the hypothesis names the gold option in "
                         f"{m['hypothesis_gold']:.2f} of {m['n']}; the answer follows it in {m['answer_follows']:.2f}; "
                         f"of {m['wrong_hypotheses']} wrong hypotheses, {overturned} are overturned to the gold option")
    return lines


def markdown(table: PaperTable, cells: list[Cell], corpus: str) -> str:
    source = paper(table.paper)
    differs, same = setting_flags(table, cells, corpus)
    lines = [f"## {table.name}: {table.title}", "", f"Paper: {source['citation']} {source['url']}", ""]
    lines += ["**Differs from the paper:**"] + [f"- {d}" for d in differs] + [""]
    if same:
        lines += [f"Same as the paper: {', '.join(same)}.", ""]
    lines += ROWS[table.kind](table, cells)
    pooled = pooled_figures(table, cells)
    if pooled:
        lines += [""] + pooled
    lines += ["", "Counted (strict parsing scores an unparseable answer wrong; a fallback is never silent):"]
    lines += counted(cells)
    mechanism = mechanism_lines(cells)
    if mechanism:
        lines += ["", "Mechanism:"] + mechanism
    if table.note:
        lines += ["", table.note]
    lines += ["", "Paper figures: only those we could read and check are stored (reproduction/paper_figures.json, "
              "each with where it is stated); '–' is a cell we do not hold, not a zero."]
    return "\n".join(lines) + "\n"


def _retrieves(method: str | None) -> bool:
    """Whether a recorded method reads passages (its budget means something): asked of its class."""
    return method in METHODS and METHODS[method].program.uses_retrieval
