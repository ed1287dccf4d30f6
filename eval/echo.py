"""Does a program's retrieval escape its reader's mistakes? Per method whose rows hold a hypothesis: how often it
names the reader's own closed-book answer and nothing else (its "echo": passages found for that option confirm
what the reader already believes, right or wrong), how often the options it names include the gold one, and of the
passages read alone, the share pulling toward the closed-book answer.

The closed-book answer of a question is the row's own closed-book reading where its program made one, else the
`cot` row of the same question (the same reader without passages). A generated hypothesis names one option (HCQR's
letter, CHR's H+ by its text); a hypothesis drawn from the reader's doubt names the options it is torn between.
"""

from __future__ import annotations

from typing import Any

from hyporag.eval.paper_analyses import by_method
from hyporag.eval.row import ResultRow

REFERENCE = "cot"


def named_options(row: ResultRow) -> list[str]:
    """The options a row's hypothesis names (none when it names none)."""
    torn = (row.hypothesis or {}).get("torn")
    if isinstance(torn, list):
        return [str(o) for o in torn]
    return [row.hypothesis_option] if row.hypothesis_option else []


def closed_book_of(row: ResultRow, reference: dict[str, ResultRow]) -> str | None:
    own = (row.closed_book or {}).get("answer")
    if own:
        return own
    other = reference.get(row.question_id)
    return other.answer if other is not None and not other.error else None


def echo_rates(rows: list[dict]) -> dict[str, dict[str, Any]]:
    """Per method with hypotheses: rows with one, the echo rate, the share naming gold among its options, and the
    share of pulled passages pulling toward the closed-book answer."""
    grouped = by_method([r for r in rows if not r.get("error")])
    reference = grouped.get(REFERENCE, {})
    out: dict[str, dict[str, Any]] = {}
    for method, qs in grouped.items():
        with_hypothesis = [r for r in qs.values() if r.hypothesis]
        if not with_hypothesis:
            continue
        known = [(r, cb) for r in with_hypothesis if (cb := closed_book_of(r, reference))]
        pulls = [(p["toward"], cb) for r, cb in known for p in r.passage_pulls
                 if p is not None and p.get("direction") != "none"]
        out[method] = {
            "n": len(with_hypothesis),
            "echo": sum(named_options(r) == [cb] for r, cb in known) / len(known) if known else None,
            "names_gold": sum(r.gold in named_options(r) for r in with_hypothesis) / len(with_hypothesis),
            "pull_closed_book": sum(t == cb for t, cb in pulls) / len(pulls) if pulls else None}
    return out
