"""Which tuned candidate a multi-method fit ships: a stated rule on validation rows, so the pick is never the
most expensive method winning on noise.

The rule (`SelectionRule.describe` says it in every report): candidates are ranked by validation accuracy, then by
the reader's mean log p(gold) (clipped at −5), then by fewer LM calls per question. The simplest candidate (`rag`
when it is among them, else the one with the fewest LM calls per question) is kept unless a higher-ranked one beats
it beyond chance, paired on the same validation questions: accuracy not lower, and either McNemar's p below
`alpha` or, with at least `min_continuous` validation questions, the 95% bootstrap interval of its log p(gold)
advantage above 0. Below that many questions a percentile bootstrap interval is too narrow to trust (on 7
questions of the stdlib fit it called a difference that held-out did not confirm), so only McNemar can decide. A
candidate over `max_calls_per_question` is not eligible. Calls per question are the method's own (its declared
count, or more where the rows measured more): validation answers are often cached from tuning, and a cached call
is free to the fit but not to the user who ships the program.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from hyporag.eval.decision import LEAD, method_means, paired_measures
from hyporag.eval.row import ResultRow


@dataclass(frozen=True)
class SelectionRule:
    simplest: str = "rag"
    alpha: float = 0.1
    max_calls_per_question: float | None = None
    min_continuous: int = 20  # validation questions below which log p(gold)'s interval does not count

    def describe(self) -> str:
        cap = (f"; a candidate over {self.max_calls_per_question:g} LM calls per question is not eligible"
               if self.max_calls_per_question is not None else "")
        return (f"rank by validation accuracy, then mean log p(gold) clipped at -5, then fewer LM calls per question; "
                f"keep the simplest candidate ({self.simplest} when tried, else the fewest LM calls per question) "
                f"unless a higher-ranked one has accuracy not lower and beats it beyond chance on the same questions "
                f"(McNemar p < {self.alpha:g}, or, on at least {self.min_continuous} questions, the 95% bootstrap "
                f"interval of its log p(gold) advantage above 0){cap}")

    def smallest_decisive(self) -> int:
        """The fewest validation questions on which McNemar can reach p < alpha: every one discordant in the
        candidate's favour, p = 2 · 0.5^n."""
        n = 1
        while 2 * 0.5 ** n >= self.alpha:
            n += 1
        return n

    def undecidable(self, n_val: int) -> str | None:
        """Why a validation split of `n_val` questions can only ever keep the simplest candidate (None when a
        candidate can win there)."""
        if n_val >= self.smallest_decisive():
            return None
        return (f"on {n_val} validation question(s) the rule can only keep {self.simplest}: McNemar's smallest p there "
                f"is {min(1.0, 2 * 0.5 ** n_val):.3g}, not below {self.alpha:g}, and the log p(gold) interval counts "
                f"from {self.min_continuous} questions")

    def to_dict(self) -> dict:
        return {**asdict(self), "text": self.describe()}


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
           declared_calls: dict[str, float] | None = None) -> dict:
    """The chosen candidate, the runner-up, and the evidence: each candidate's validation scores and its paired
    comparison with the simplest. `declared_calls`: each method's own LM calls per question (its class says)."""
    scores = _scores(rows, candidates, declared_calls or {})
    simplest = rule.simplest if rule.simplest in candidates else min(
        candidates, key=lambda m: (scores[m]["calls_per_q"], candidates.index(m)))
    paired = paired_measures([r for r in rows if r["method"] in candidates], simplest, seed)

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
        comparison = paired.get(method) or {}
        accuracy, lead = comparison.get("accuracy") or {}, comparison.get(LEAD) or {}
        not_lower = (accuracy.get("mean") or 0.0) >= 0
        enough = (lead.get("n") or 0) >= rule.min_continuous
        beyond = (accuracy.get("mcnemar_p", 1.0) < rule.alpha
                  or (enough and lead.get("ci95_low") is not None and lead["ci95_low"] > 0))
        verdicts[method] = ("over the LM-call cap" if over_cap else "beats the simplest beyond chance"
                            if not_lower and beyond else "not beyond chance against the simplest")
    eligible = [m for m in ranked if m != simplest and verdicts[m] == "beats the simplest beyond chance"]
    chosen = eligible[0] if eligible and rank(eligible[0]) < rank(simplest) else simplest
    runner_up = next((m for m in ranked if m != chosen), None)
    return {"chosen": chosen, "runner_up": runner_up, "simplest": simplest, "ranking": ranked, "scores": scores,
            "verdicts": verdicts, "paired_vs_simplest": paired, "rule": rule.to_dict()}
