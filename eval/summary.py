"""Metrics over per-question result rows: accuracy with a 95% Wilson interval, parse failures, cost per question.

`MethodSummary` is one method's line of summary.json, defined once: `summarize` makes it from the rows, the report
fills in what needs more than one method (paired tests, lift, DUR), and readers of summary.json use
`MethodSummary.of(dict)` rather than string keys of their own."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from hyporag.eval.pulls import pull_shares
from hyporag.eval.row import ResultRow


@dataclass
class MethodSummary:
    method: str
    n: int = 0
    accuracy: float = 0.0
    ci95_low: float = 0.0
    ci95_high: float = 0.0
    parse_failures: int = 0
    errors: int = 0  # errored rows: counted as wrong in `accuracy` (a re-run of the same command retries them)
    malformed_replies: int = 0  # replies that arrived cut short and were asked again (the row then answered)
    fallbacks: dict = field(default_factory=dict)  # kind -> rows that took it
    calls_per_q: float = 0.0  # the method's own cost: calls served from DSPy's cache count too
    cache_hits: int = 0  # calls of these rows served from the cache (not paid for when they were answered)
    input_tokens_per_q: float = 0.0
    output_tokens_per_q: float = 0.0
    processed_tokens_per_q: float | None = None  # None: the backend did not report its prompt cache
    seconds_per_q: float = 0.0
    retrieves: bool = False  # the method reads passages (its rows record the retrieval mode it ran in)
    with_passages: int = 0  # rows whose context held at least one passage
    # filled by the report (eval/report.build_report): None where the run has no such measure
    with_probabilities: int = 0  # rows with the reader's full option distribution
    damaged_distributions: int = 0  # rows whose stored distribution is not one (eval.belief): left out, said
    log_p_gold: float | None = None  # the lead measure's mean (clipped, eval/decision.LEAD)
    p_gold: float | None = None
    margin: float | None = None
    vs_rag_lead_difference: float | None = None  # against the run's baseline (the key keeps its first name)
    vs_rag_lead_p_value: float | None = None
    lift_over_cot: float | None = None
    lift_positive: float | None = None
    dur: float | None = None
    vs_rag_difference: float | None = None
    vs_rag_p_value: float | None = None
    gold_in_context: float | None = None
    distractor_in_context: float | None = None
    read_alone: int = 0  # rows answered per passage (each passage read alone, then mixed)
    pulled_passages: int = 0  # passages whose pull on the reader is known (eval.pulls)
    pull_gold: float | None = None  # of those, the share pulling toward the gold option
    pull_distractor: float | None = None  # ... toward another option
    pull_gold_by_judge: dict | None = None  # where the DUR judge ran: its label -> the share pulling toward gold
    retrieved_share: float | None = None  # retrieval on demand: the share of questions that retrieved
    # does retrieval escape the reader's mistakes (eval.echo)? the hypothesis names only the closed-book answer;
    # the options it names include gold; passages read alone that pull toward the closed-book answer
    echo: float | None = None
    hypothesis_names_gold: float | None = None
    pull_closed_book: float | None = None
    sequence_outcome: str | None = None  # against the baseline, read as a confidence sequence (eval.comparisons)
    decided_at: int | None = None  # the question (in the run's order) at which it was decided

    @classmethod
    def of(cls, data: dict[str, Any]) -> MethodSummary:
        """From summary.json's dict; a field an older run did not write takes its default."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __getitem__(self, name: str) -> Any:
        """`summary["accuracy"]` reads as summary.json's dict did: code written against it keeps working."""
        if name not in self.__dataclass_fields__:
            raise KeyError(name)
        return getattr(self, name)


def summaries(report: dict) -> list[MethodSummary]:
    """A report's per-method lines, typed (summary.json holds them as dicts)."""
    return [MethodSummary.of(s) for s in report["methods"]]


def wilson_interval(correct: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95% Wilson score interval: well-behaved at small n and near 0 or 1, unlike the normal approximation."""
    if n == 0:
        return (0.0, 0.0)
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def summarize(rows: Iterable[dict]) -> list[MethodSummary]:
    """One summary per method, in first-seen order."""
    by_method: dict[str, list[ResultRow]] = defaultdict(list)
    for row in map(ResultRow.of, rows):
        by_method[row.method].append(row)
    summary = []
    for method, items in by_method.items():
        n = len(items)
        correct = sum(1 for r in items if r.correct)
        low, high = wilson_interval(correct, n)
        summary.append(MethodSummary(
            method=method,
            n=n,
            accuracy=correct / n if n else 0.0,
            ci95_low=low,
            ci95_high=high,
            parse_failures=sum(1 for r in items if r.parse_failure),
            errors=sum(1 for r in items if r.error),
            malformed_replies=sum(r.malformed_replies for r in items),
            fallbacks=fallback_counts(items),
            calls_per_q=sum(r.calls for r in items) / n if n else 0.0,
            cache_hits=sum(r.cache_hits for r in items),
            input_tokens_per_q=sum(r.input_tokens for r in items) / n if n else 0.0,
            output_tokens_per_q=sum(r.output_tokens for r in items) / n if n else 0.0,
            processed_tokens_per_q=_mean_known([r.processed_tokens for r in items]),
            seconds_per_q=sum(r.seconds for r in items) / n if n else 0.0,
            retrieves=any(r.retrieval_sees_options is not None for r in items),
            with_passages=sum(1 for r in items if r.passage_ids),
            read_alone=sum(1 for r in items if r.passage_readings),
            **_pulls(items),
            retrieved_share=_share([r.retrieved for r in items if r.retrieved is not None]),
        ))
    return summary


def _pulls(rows: list[ResultRow]) -> dict[str, Any]:
    shares = pull_shares(r.passage_pulls for r in rows)
    if shares is None:
        return {}
    by_label = {label: pull_shares(r.passage_pulls for r in rows if r.judge_label == label)
                for label in sorted({r.judge_label for r in rows if r.judge_label})}
    return {"pulled_passages": shares["passages"], "pull_gold": shares["gold"],
            "pull_distractor": shares["distractor"],
            "pull_gold_by_judge": {k: v["gold"] for k, v in by_label.items() if v} or None}


def _share(flags: list[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def fallback_counts(rows: Iterable[ResultRow]) -> dict[str, int]:
    """Rows that took each kind of fallback (a program names its kinds: HCQR's query, CHR's contrast, ...)."""
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        for kind, value in row.fallbacks.items():
            counts[kind] += bool(value)
    return dict(sorted(counts.items()))


def fallback_cell(counts: dict[str, int] | None) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in (counts or {}).items() if n) or "0"


def notes(summary: list[MethodSummary]) -> list[str]:
    """What a reader of the table must know to read it right: errored rows counted as wrong, replies asked again,
    a retrieval method that found nothing."""
    out = []
    errored = [s for s in summary if s.errors]
    if errored:
        out.append("Errored rows count as wrong in accuracy (" + ", ".join(f"{s.method} {s.errors} of {s.n}"
                   for s in errored) + "); re-run the same command to answer them again.")
    retried = [s for s in summary if s.malformed_replies]
    if retried:
        out.append("Replies that arrived cut short (HTTP 200 without a reply) were asked again: "
                   + ", ".join(f"{s.method} {s.malformed_replies}" for s in retried) + ".")
    for s in summary:
        if s.read_alone and s.pull_gold is not None:
            judged = "; by the judge's label of the context, toward the correct option: " + ", ".join(
                f"{label} {share:.0%}" for label, share in s.pull_gold_by_judge.items()) if s.pull_gold_by_judge else ""
            out.append(f"{s.method}: {s.read_alone} of {s.n} questions read passage by passage; of {s.pulled_passages} "
                       f"passages read alone, {s.pull_gold:.0%} pulled the reader toward the correct option and "
                       f"{s.pull_distractor:.0%} toward another{judged}.")
        if s.retrieved_share is not None:
            out.append(f"{s.method}: answered closed-book first and retrieved on {s.retrieved_share:.0%} of "
                       "questions (where the reader was unsure).")
    empty = [s for s in summary if s.retrieves and s.n and not s.with_passages and s.retrieved_share != 0]
    if empty:
        out.append(f"{', '.join(s.method for s in empty)}: retrieved no passage for any question, so answered "
                   "closed-book; check the corpus and index the run used.")
    return out


def _mean_known(values: list[int | None]) -> float | None:
    """The mean, or None when any value is unknown (a backend that does not report its prompt cache)."""
    return None if not values or any(v is None for v in values) else sum(values) / len(values)


def format_table(summary: list[MethodSummary]) -> str:
    """A Markdown table of the summary (what `hyporag eval` prints and writes to summary.md)."""
    head = ("| method | n | accuracy | 95% CI | parse fail | errors | fallbacks | calls/q | "
            "in tok/q sent | processed | out tok/q | s/q |")
    lines = [head, "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in summary:
        processed = "–" if s.processed_tokens_per_q is None else format(s.processed_tokens_per_q, ".0f")
        lines.append(
            f"| {s.method} | {s.n} | {s.accuracy:.3f} | {s.ci95_low:.3f}–{s.ci95_high:.3f} | "
            f"{s.parse_failures} | {s.errors} | {fallback_cell(s.fallbacks)} | {s.calls_per_q:.2f} | "
            f"{s.input_tokens_per_q:.0f} | {processed} | {s.output_tokens_per_q:.0f} | {s.seconds_per_q:.1f} |"
        )
    return "\n".join(lines)
