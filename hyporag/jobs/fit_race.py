"""The race before a several-candidate fit spends on tuning: successive elimination. Every candidate's untuned
program (its preset, what a study's trial 0 would run) answers the validation questions in the split's seeded
order, every candidate each question, and after each question every pair of candidates still running is compared on
the deciding measure (hyporag.eval.comparisons: p(gold), or accuracy where the rows hold no option probabilities) by
the betting test; a candidate the test says is worse than another stops there. The others go on, until one is left
or the questions end. Only validation races: those answers are each study's trial 0, so the race costs no call
tuning would not make, and train questions (which the teleprompter reads a few of) do not vote. A race that could
not drop anything at the split's size (even a candidate worse on every question by the most the measure allows
would not be decided) is skipped, and the plan says so. Only the survivors are tuned and compiled. The simplest
candidate (the one a pick is measured against) is never dropped: the validation rule and the held-out comparison
need it tuned like the others.

The guarantee: alpha is split over every pair of the starting candidates (Bonferroni), so the chance that any
candidate is dropped while it is in fact not worse than the one that dropped it is at most alpha. What a race of
untuned programs cannot see: a candidate that tuning would have rescued (its numbers or prompts made it better than
its preset) is dropped on its preset's showing. Held-out questions never enter the race.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import Any

from hyporag.eval.comparisons import ALPHA, compare_sequences
from hyporag.eval.engine import record_run
from hyporag.eval.paper_analyses import by_method
from hyporag.eval.row import ResultRow
from hyporag.jobs.builders import build_program
from hyporag.jobs.evaluate import run_record
from hyporag.optimizers.selection import fewest_to_decide
from hyporag.questions.records import question_fingerprint


def pairs_of(methods: list[str]) -> list[tuple[str, str]]:
    return list(combinations(methods, 2))


ERRORED_AFTER = 3  # a candidate whose first answers all errored is dropped: it cannot be compared, tuned or shipped


def errored_out(rows: list[dict], methods: list[str], order: list[str], keep: str | None = None) -> dict[str, dict]:
    """Each candidate (but `keep`) that has answered at least ERRORED_AFTER questions and errored on every one: where
    it was dropped (its last question in the race's order) and its first error."""
    position = {q: i for i, q in enumerate(order, start=1)}
    out: dict[str, dict] = {}
    for method in methods:
        mine = [r for r in rows if r["method"] == method]
        if method != keep and len(mine) >= ERRORED_AFTER and all(r.get("error") for r in mine):
            first = min(mine, key=lambda r: position.get(r["question_id"], len(position) + 1))
            out[method] = {"question": max(position.get(r["question_id"], 0) for r in mine), "by": "errors",
                           "behind": None, "error": first["error"]}
    return out


def drops_in(rows: list[dict], methods: list[str], order: list[str], alpha: float,
             keep: str | None = None) -> dict[str, dict]:
    """Each candidate (but `keep`) that some other candidate is surely better than, on the rows so far: where (the
    question in the race's order), by which measure, behind which candidate; and each that errored on every question
    it was asked (errored rows are in no comparison, so such a candidate would never be dropped by one)."""
    errored = errored_out(rows, methods, order, keep)
    grouped = by_method([r for r in rows if not r.get("error")])
    family = pairs_of(methods)  # the whole starting field: the alpha split does not change as candidates drop
    result = compare_sequences({f"{a}|{b}": (grouped.get(a, {}), grouped.get(b, {})) for a, b in family}, order,
                               alpha, beside=False)
    dropped: dict[str, dict] = {}
    for name, comparison in result["comparisons"].items():
        a, b = name.split("|")
        if comparison["outcome"] not in ("better", "worse"):
            continue
        loser, winner = (b, a) if comparison["outcome"] == "better" else (a, b)
        if loser == keep:
            continue
        earlier = dropped.get(loser)
        if loser not in errored and (earlier is None or comparison["decided_at"] < earlier["question"]):
            dropped[loser] = {"question": comparison["decided_at"], "by": comparison["by"], "behind": winner,
                              "alpha_each": result["alpha_each"]}
    return {**dropped, **errored}


def race_is_possible(candidates: int, questions: int, alpha: float = ALPHA) -> str | None:
    """Why a race of `candidates` on `questions` could drop nothing (None when it could)."""
    needed = fewest_to_decide(alpha / max(1, len(pairs_of(list(range(candidates))))))
    if questions >= needed:
        return None
    return (f"a race of {candidates} candidates on {questions} validation question(s) could drop none (even one "
            f"worse on every question by the most its measure allows needs {needed}); skipped, every candidate is "
            "tuned")


class RaceRule:
    """The engine's `until` for a race: before each question, the candidates still running (a list), or True once
    one is left."""

    def __init__(self, methods: list[str], order: list[str], alpha: float, keep: str | None):
        self.methods, self.order, self.alpha, self.keep = methods, order, alpha, keep

    def __call__(self, settings: dict, rows: list[dict]) -> bool | list[str]:
        dropped = drops_in(rows, self.methods, self.order, self.alpha, self.keep)
        left = [m for m in self.methods if m not in dropped]
        return True if len(left) <= 1 else left

    def record(self, settings: dict, rows: list[dict]) -> dict:
        return {}  # the race's own record is the fit's race stage


def race(methods: list[str], questions: list, out: Path, run, roles, retriever, alpha: float = ALPHA,
         threads: int = 1, keep: str | None = None) -> dict[str, Any]:
    """Race the candidates' untuned programs on `questions` into `out` (a results directory, resumable); the
    record of who survived, who was dropped where and behind whom, and each candidate's questions and LM calls."""
    programs = {m: build_program(m, run, retriever, roles) for m in methods}
    order = [e.id for e in questions]
    fingerprints = {e.id: question_fingerprint(e) for e in questions}
    recorded = {"dataset": run.data.dataset, "n": len(questions), "seed": run.data.seed, "race": True,
                **run_record(programs, roles, retriever, {m: run.config_for(m) for m in methods}),
                "sequential": {"alpha": alpha, "race": True}}

    def current(rows: list[dict]) -> list[dict]:
        return [r for r in rows if r["method"] in programs
                and r.get("question_fingerprint") == fingerprints.get(r["question_id"])]

    record = record_run(programs, questions, out, recorded, threads=threads, progress=True,
                        until=RaceRule(methods, order, alpha, keep))
    rows = current(record.rows)
    dropped = drops_in(rows, methods, order, alpha, keep)
    typed = [ResultRow.of(r) for r in rows]
    answered = {m: sum(1 for r in typed if r.method == m) for m in methods}
    calls = {m: sum(r.calls for r in typed if r.method == m) for m in methods}
    survivors = [m for m in methods if m not in dropped]
    return {"summary": f"{len(survivors)} of {len(methods)} go on ({', '.join(survivors)})"
                       + "".join(f"; {m} dropped at question {d['question']} " + (
                           f"behind {d['behind']} ({d['by']})" if d["behind"] else f"(every answer errored: "
                                                                                  f"{d['error']})")
                                 for m, d in dropped.items()),
            "survivors": survivors, "dropped": dropped, "questions": answered, "calls": calls,
            "alpha": alpha, "pairs": len(pairs_of(methods)), "race_questions": len(questions)}
