"""Analyses over result rows that the papers report: paired tests against simple RAG, DUR, utility-conditioned
accuracy against no-retrieval CoT (HCQR Table 4), top-5 overlap on disagreements (CHR Table 4), evidence rates."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from itertools import combinations

from hyporag.eval.mcnemar import paired_comparison
from hyporag.eval.row import ResultRow, processed_of
from hyporag.foundation.judge_labels import LABELS


def by_method(rows: list[dict]) -> dict[str, dict[str, ResultRow]]:
    grouped: dict[str, dict[str, ResultRow]] = defaultdict(dict)
    for row in map(ResultRow.of, rows):
        grouped[row.method][row.question_id] = row
    return grouped


def paired_against(rows: list[dict], baseline: str = "rag",
                   outcome: Callable[[ResultRow], bool | None] = lambda r: bool(r.correct)) -> dict[str, dict]:
    """Each method against `baseline` on the same questions: by default accuracy; `outcome` may judge something
    else (a decision-useful context), returning None for a question that has no such judgment."""
    grouped = by_method(rows)
    if baseline not in grouped:
        return {}

    def judged(qs: dict[str, ResultRow]) -> dict[str, bool]:
        return {q: value for q, r in qs.items() if (value := outcome(r)) is not None}

    base = judged(grouped[baseline])
    return {m: paired_comparison(judged(qs), base) for m, qs in grouped.items() if m != baseline}


def decision_useful(row: ResultRow) -> bool | None:
    """Entailed or Useful; None when the context was not judged."""
    return row.judge_label in ("Entailed", "Useful") if row.judge_label else None


def dur(rows: list[dict]) -> dict[str, dict]:
    """Per method: label counts over judged questions and DUR = (Entailed + Useful) / judged."""
    out = {}
    for method, qs in by_method(rows).items():
        labels = [r.judge_label for r in qs.values() if r.judge_label]
        if not labels:
            continue
        counts = {label: labels.count(label) for label in LABELS}
        out[method] = {"judged": len(labels), **counts,
                       "dur": (counts["Entailed"] + counts["Useful"]) / len(labels)}
    return out


def utility_conditioned_accuracy(rows: list[dict], reference: str = "cot") -> dict[str, dict]:
    """Accuracy within each judge label, and its difference from `reference` (no retrieval) on the same questions."""
    grouped = by_method(rows)
    ref = grouped.get(reference, {})
    out: dict[str, dict] = {}
    for method, qs in grouped.items():
        per_label = {}
        for label in LABELS:
            ids = [q for q, r in qs.items() if r.judge_label == label]
            if not ids:
                continue
            acc = sum(bool(qs[q].correct) for q in ids) / len(ids)
            shared = [q for q in ids if q in ref]
            ref_acc = sum(bool(ref[q].correct) for q in shared) / len(shared) if shared else None
            per_label[label] = {"n": len(ids), "accuracy": acc,
                                "delta_vs_" + reference: None if ref_acc is None else acc - ref_acc}
        if per_label:
            out[method] = per_label
    return out


def disagreement_overlap(rows: list[dict], top: int = 5) -> list[dict]:
    """Mean Jaccard overlap of two methods' top-`top` passage ids where exactly one of them is right, and the share
    of those questions where the two lists share no passage. `a_right_*` / `b_right_*` keep the questions where that
    method is right and the other wrong: the CHR paper's redirection-vs-reranking figure (CHR right, HyDE wrong)."""
    grouped = by_method(rows)
    retrieving = [m for m, qs in grouped.items() if any(r.passage_ids for r in qs.values())]
    out = []
    for a, b in combinations(retrieving, 2):
        overlaps: list[float] = []
        right: dict[str, list[float]] = {"a": [], "b": []}
        for q in set(grouped[a]) & set(grouped[b]):
            ra, rb = grouped[a][q], grouped[b][q]
            if bool(ra.correct) != bool(rb.correct):
                sa, sb = set(ra.passage_ids[:top]), set(rb.passage_ids[:top])
                overlaps.append(len(sa & sb) / len(sa | sb) if sa | sb else 1.0)
                right["b" if rb.correct else "a"].append(overlaps[-1])
        if overlaps:
            entry = {"a": a, "b": b, "disagreements": len(overlaps), "mean_jaccard": _mean(overlaps),
                     "no_shared": _share_disjoint(overlaps)}
            for side, values in right.items():
                entry |= {f"{side}_right_cases": len(values), f"{side}_right_mean_jaccard": _mean(values),
                          f"{side}_right_no_shared": _share_disjoint(values)}
            out.append(entry)
    return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _share_disjoint(overlaps: list[float]) -> float | None:
    return sum(o == 0.0 for o in overlaps) / len(overlaps) if overlaps else None


def evidence_rates(rows: list[dict]) -> dict[str, dict]:
    out = {}
    for method, qs in by_method(rows).items():
        with_context = [r for r in qs.values() if r.passage_ids]
        if with_context:
            out[method] = {
                "gold_in_context": sum(bool(r.gold_in_context) for r in with_context) / len(with_context),
                "distractor_in_context": sum(bool(r.distractor_in_context) for r in with_context)
                / len(with_context),
            }
    return out


COST_FIELDS = ("calls", "input_tokens", "output_tokens", "seconds")


def cost_by_role(rows: list[dict]) -> dict[str, dict[str, dict]]:
    """Per method and role (hypothesis, answer, ... and the DUR judge): calls, tokens and seconds per question.

    Averages are over all of the method's questions, so the roles of one method add up to its per-question cost."""
    out: dict[str, dict[str, dict]] = {}
    for method, qs in by_method(rows).items():
        totals: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(COST_FIELDS, 0.0))
        processed: dict[str, float | None] = defaultdict(float)  # None once any call did not report its cache
        for r in qs.values():
            for role, cost in (r.cost_by_role or {}).items():
                for field in COST_FIELDS:
                    totals[role][field] += cost.get(field, 0) or 0
                known = processed_of(cost)
                processed[role] = None if known is None or processed[role] is None else processed[role] + known
            if r.judge_label or r.judge_calls:
                for field in COST_FIELDS:
                    totals["judge"][field] += getattr(r, f"judge_{field}", 0) or 0
                processed["judge"] = None
        out[method] = {role: {**{f: v / len(qs) for f, v in t.items()},
                              "processed_tokens": None if processed[role] is None else processed[role] / len(qs)}
                       for role, t in totals.items()}
    return out


def mechanism(rows: list[dict]) -> dict[str, dict]:
    """Does the answer step overturn a wrong hypothesis from the evidence (the papers' claim)? Per method whose
    rows name a hypothesis option: how often it is the gold option, how often the answer follows it, and, when it
    is wrong, how often the answer is the gold option instead."""
    out = {}
    for method, qs in by_method(rows).items():
        named = [r for r in qs.values() if r.hypothesis_option and not r.error]
        if not named:
            continue
        wrong = [r for r in named if r.hypothesis_option != r.gold]
        out[method] = {"n": len(named),
                       "hypothesis_gold": sum(r.hypothesis_option == r.gold for r in named) / len(named),
                       "answer_follows": sum(r.answer == r.hypothesis_option for r in named) / len(named),
                       "wrong_hypotheses": len(wrong),
                       "overturned_to_gold": sum(r.answer == r.gold for r in wrong) / len(wrong) if wrong else None}
    return out
