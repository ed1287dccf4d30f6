"""HCQR: hypothesis-conditioned query rewriting.

Hypothesize (from the question and, by default, its options) → RewriteQueries (support / distinction / key
features) → one batched search → merge to the shared budget → answer. The hypothesis steers retrieval only: the
answer step never sees it unless `show_hypothesis=True` (an ablation). Ablations are options, not copies.
"""

from __future__ import annotations

import dspy

from hyporag.errors import ConfigError
from hyporag.programs.base import MCQProgram, Trace
from hyporag.programs.cost import CostMeter
from hyporag.retrieval.hit import Hit
from hyporag.retrieval.merge import merge_to_budget
from hyporag.signatures import Hypothesize, RewriteQueries

QUERY_FIELDS = {"support": "support_query", "distinction": "distinction_query", "key_features": "key_features_query"}


class HCQR(MCQProgram):
    method = "hcqr"
    default_sees_options = True

    def __init__(self, *args, queries: tuple[str, ...] = ("support", "distinction", "key_features"),
                 per_query_k: int | None = None, merge_policy: str = "round_robin", show_hypothesis: bool = False,
                 **kwargs):
        super().__init__(*args, **kwargs)
        unknown = set(queries) - set(QUERY_FIELDS)
        if unknown or not queries:
            raise ConfigError(f"HCQR queries must be a non-empty subset of {', '.join(QUERY_FIELDS)}; got {queries}")
        self.queries = tuple(q for q in QUERY_FIELDS if q in queries)
        self.per_query_k = per_query_k or self.budget
        self.merge_policy = merge_policy
        self.show_hypothesis = show_hypothesis
        self.hypothesize = dspy.Predict(Hypothesize)
        self.rewrite = dspy.Predict(RewriteQueries)

    def retrieve(self, question: str, options: dict[str, str], meter: CostMeter, trace: Trace) -> list[Hit]:
        shown = self.retrieval_options(options)
        hypothesis = self.query_step(self.hypothesize, meter, trace, question=question, options=shown)
        state = {
            "likely_option": getattr(hypothesis, "likely_option", "") or "",
            "discriminating_features": list(getattr(hypothesis, "discriminating_features", None) or []),
            "expected_evidence": getattr(hypothesis, "expected_evidence", "") or "",
            "rationale": getattr(hypothesis, "rationale", "") or "",
        }
        rewritten = self.query_step(self.rewrite, meter, trace, question=question, options=shown,
                                    hypothesis=self._describe(state, options))
        trace.hypothesis = state
        queries = [str(getattr(rewritten, QUERY_FIELDS[name], None) or question) for name in self.queries]
        trace.queries.extend(queries)
        ranked = self.retriever.search_many(queries, self.per_query_k, mode=self.mode)
        return merge_to_budget(ranked, self.budget, self.merge_policy)

    @staticmethod
    def _describe(state: dict, options: dict[str, str]) -> str:
        letter = str(state["likely_option"]).strip().upper()[:1]
        option = f"{letter}. {options[letter]}" if letter in options else str(state["likely_option"])
        features = "; ".join(map(str, state["discriminating_features"]))
        return f"Likely: {option}. Features: {features}. Expected evidence: {state['expected_evidence']}"

    def context_preface(self, trace: Trace) -> str:
        if not self.show_hypothesis or not trace.hypothesis:
            return ""
        return f"Working hypothesis (unverified): {trace.hypothesis['likely_option']}: {trace.hypothesis['rationale']}"

    def settings(self) -> dict:
        return {**super().settings(), "queries": list(self.queries), "per_query_k": self.per_query_k,
                "merge_policy": self.merge_policy, "show_hypothesis": self.show_hypothesis}
