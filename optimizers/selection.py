"""Which tuned candidate a multi-method fit ships: a stated rule on validation rows, so the pick is never the
most expensive method winning on noise.

The rule (`SelectionRule.describe` says it in every report): candidates are ranked by validation accuracy, then by
the reader's mean log p(gold) (clipped at −5), then by fewer LM calls per question. The simplest candidate (`rag`
when it is among them, else the one with the fewest LM calls per question) is kept unless a higher-ranked one beats
it with the error guarantee: each candidate's paired difference with the simplest on the same validation questions,
in their seeded order, decided on the deciding measure (hyporag.eval.comparisons: p(gold), or accuracy where the
rows hold no option probabilities) with alpha split over every candidate, says "better". The race before tuning
(hyporag.jobs.fit_race) uses the same test. A candidate over `max_calls_per_question` is not
eligible. Calls per question are the method's own (its declared count, or more where the rows measured more):
validation answers are often cached from tuning, and a cached call is free to the fit but not to the user who ships
the program. The fixed-n tests (McNemar, bootstrap intervals) are kept beside, for reading, not for the pick.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from hyporag.eval.betting_test import BettingTest
from hyporag.eval.comparisons import compare_sequences
from hyporag.eval.decision import LEAD, method_means, paired_measures
from hyporag.eval.measures import DEFAULT_DECIDING, measure_named
from hyporag.eval.paper_analyses import by_method
from hyporag.eval.row import ResultRow


@dataclass(frozen=True)
class SelectionRule:
    simplest: str = "rag"
    alpha: float = 0.05  # shared by every candidate's comparison with the simplest (Bonferroni)
    max_calls_per_question: float | None = None
    decide_on: str | None = None  # the deciding measure (None: p(gold), accuracy without option probabilities)

    def describe(self) -> str:
        cap = (f"; a candidate over {self.max_calls_per_question:g} LM calls per question is not eligible"
               if self.max_calls_per_question is not None else "")
        measure = measure_named(self.decide_on or DEFAULT_DECIDING).label
        return (f"rank by validation accuracy, then mean log p(gold) clipped at -5, then fewer LM calls per question; "
                f"keep the simplest candidate ({self.simplest} when tried, else the fewest LM calls per question) "
                f"unless a higher-ranked one beats it with the error guarantee: its paired difference with the "
                f"simplest on the same questions, decided on {measure} by a betting test (alpha {self.alpha:g} split "
                f"over every candidate), says better{cap}")

    def smallest_decisive(self, candidates: int = 2) -> int:
        """The fewest validation questions on which a candidate that beats the simplest by the most the deciding
        measure allows on every question could be decided better, at this rule's share of alpha."""
        return fewest_to_decide(self.alpha / max(1, candidates - 1))

    def undecidable(self, n_val: int, candidates: int = 2) -> str | None:
        """Why a validation split of `n_val` questions can only ever keep the simplest candidate (None when a
        candidate can win there)."""
        needed = self.smallest_decisive(candidates)
        if n_val >= needed:
            return None
        return (f"on {n_val} validation question(s) the rule can only keep {self.simplest}: even a candidate better "
                f"on every question by the most its measure allows needs {needed} before its test can say it is "
                "better")

    def to_dict(self) -> dict:
        return {**asdict(self), "text": self.describe()}


def fewest_to_decide(alpha_each: float) -> int:
    """The fewest paired questions on which the betting test at `alpha_each` can say better: every difference the
    largest the measure allows (the same count on every bounded measure, the test reading x = (d + c) / 2c)."""
    test = BettingTest(1.0, alpha_each)
    for _ in range(10_000):
        if test.update(1.0) != "undecided":
            return test.decided_at
    return 10_000


def _scores(rows: list[dict], candidates: list[str], declared: dict[str, float]) -> dict[str, dict]:
    means = method_means(rows)
    out = {}
    for method in candidates:
        mine = [ResultRow.of(r) for r in rows if r["method"] == method]
        n = len(mine)
        out[method] = {"n": n, "accuracy": sum(r.correct for r in mine) / n if n else 0.0,
                       "log_p_gold": (means.get(method) or {}).get(LEAD),
                       "calls_per_q": max(sum(r.calls for r in mine) / n if n else 0.0, declared.get(method, 0.0))}
    return out


def select(rows: list[dict], candidates: list[str], rule: SelectionRule, seed: int = 0,
           declared_calls: dict[str, float] | None = None, order: Sequence[str] | None = None) -> dict:
    """The chosen candidate, the runner-up, and the evidence: each candidate's validation scores, its sequences
    against the simplest (in `order`, the validation questions' seeded order) and the fixed-n tests beside them.
    `declared_calls`: each method's own LM calls per question (its class says)."""
    scores = _scores(rows, candidates, declared_calls or {})
    simplest = rule.simplest if rule.simplest in candidates else min(
        candidates, key=lambda m: (scores[m]["calls_per_q"], candidates.index(m)))
    paired = paired_measures([r for r in rows if r["method"] in candidates], simplest, seed)
    grouped = by_method([r for r in rows if not r.get("error") and r["method"] in candidates])
    order = list(order or sorted({r["question_id"] for r in rows}))
    others = [m for m in candidates if m != simplest]
    sequences = compare_sequences({m: (grouped.get(m, {}), grouped.get(simplest, {})) for m in others}, order,
                                  rule.alpha, decide_on=rule.decide_on) if others else {"comparisons": {}}

    def rank(method: str) -> tuple:
        s = scores[method]
        return (-s["accuracy"], -(s["log_p_gold"] if s["log_p_gold"] is not None else -99.0), s["calls_per_q"],
                candidates.index(method))

    ranked = sorted(candidates, key=rank)
    verdicts = {}
    for method in candidates:
        if method == simplest:
            verdicts[method] = "the simplest: kept unless another beats it"
            continue
        over_cap = (rule.max_calls_per_question is not None
                    and scores[method]["calls_per_q"] > rule.max_calls_per_question)
        outcome = sequences["comparisons"][method]["outcome"]
        verdicts[method] = ("over the LM-call cap" if over_cap else "beats the simplest with the error guarantee"
                            if outcome == "better" else f"not shown better than the simplest ({outcome})")
    eligible = [m for m in ranked if m != simplest and verdicts[m] == "beats the simplest with the error guarantee"]
    chosen = eligible[0] if eligible else simplest
    runner_up = next((m for m in ranked if m != chosen), None)
    return {"chosen": chosen, "runner_up": runner_up, "simplest": simplest, "ranking": ranked, "scores": scores,
            "verdicts": verdicts, "paired_vs_simplest": paired, "sequences_vs_simplest": sequences,
            "rule": rule.to_dict()}
