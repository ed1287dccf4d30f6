"""HCQR: hypothesis-conditioned query rewriting.

Hypothesize (from the question and, by default, its options) → RewriteQueries (support / distinction / key
features) → one batched search → merge to the shared budget → answer. The hypothesis steers retrieval only: the
answer step never sees it unless `show_hypothesis=True` (an ablation). Ablations are options, not copies.

With `hypothesis_from="reader"` the hypothesis is the reader's own doubt: the options its closed-book answer is
torn between (programs.hypothesis.torn_between), each given the same retrieval: one call writes a query for the
evidence of each, one for what distinguishes them and one for the clues that would decide between them, so the
passages can move the reader either way instead of confirming the option it already leans to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from hyporag.foundation.settings import at_least, setting
from hyporag.lm.cost import CostMeter
from hyporag.programs.base import MCQProgram, Trace
from hyporag.programs.config import ProgramConfig, flag, hypothesis_from_flag
from hyporag.programs.hypothesis import (
    HYPOTHESIS_SOURCES,
    Hypothesis,
    doubt_hypothesis,
    option_of_letter,
    torn_between,
    torn_lines,
)
from hyporag.retrieval.hit import Hit
from hyporag.retrieval.merge import MERGE_POLICIES, merge_to_budget
from hyporag.signatures import Hypothesize, QueriesForDoubt, RewriteQueries
from hyporag.signatures.paper_protocol import HypothesizeByElimination, QueriesFromHypothesis

QUERY_FIELDS = {"support": "support_query", "distinction": "distinction_query", "key_features": "key_features_query"}


@dataclass(frozen=True)
class HCQRRules:
    """HCQR's rules under a protocol."""

    hypothesis_by_elimination: bool  # the hypothesis and queries in the authors' wording
    queries_share_budget: bool  # budget // queries passages per query (else the budget per query)
    merge: str  # how the lists become one context when no merge policy is given


# fast: short steps, the budget per query, round robin; paper: the authors' elimination, budget // 3, summed scores
HCQR_RULES = {"fast": HCQRRules(False, False, "round_robin"), "paper": HCQRRules(True, True, "sum")}


@dataclass(frozen=True)
class HCQRConfig(ProgramConfig):
    """HCQR's own settings: which of the three queries run, passages per query, how the lists merge."""

    method: ClassVar[str] = "hcqr"
    protocol_rules: ClassVar[dict[str, HCQRRules]] = HCQR_RULES

    queries: tuple[str, ...] = setting(tuple(QUERY_FIELDS), rule=lambda q: None if q and not set(q) - set(
        QUERY_FIELDS) else f"must be a non-empty subset of {', '.join(QUERY_FIELDS)}; got {q}")
    per_query_k: int | None = flag("--per-query-k", "HCQR: passages retrieved per query before the merge "
                                   "(default: the budget; paper protocol: budget // queries)", rule=at_least(1))
    merge_policy: str | None = flag("--merge-policy", "HCQR: how the queries' lists become one context (default "
                                    "round_robin; paper protocol: sum)", choices=MERGE_POLICIES)
    show_hypothesis: bool = False
    hypothesis_from: str = hypothesis_from_flag()

    @property
    def merge(self) -> str:
        """The merge that runs: the authors' `sum` under the paper protocol, round robin otherwise."""
        return self.merge_policy or self.own_rules.merge

    @property
    def k(self) -> int:
        """Passages per query: the authors' budget // number of queries under the paper protocol (at least 1)."""
        if self.per_query_k:
            return self.per_query_k
        return max(1, self.budget // len(self.queries)) if self.own_rules.queries_share_budget else self.budget

    def suggest(self, trial, modes: list[str]) -> HCQRConfig:
        return super().suggest(trial, modes).replace(
            per_query_k=trial.suggest_int("per_query_k", max(1, self.budget // 3), 2 * self.budget),
            merge_policy=trial.suggest_categorical("merge_policy", list(MERGE_POLICIES)),
            hypothesis_from=trial.suggest_categorical("hypothesis_from", list(HYPOTHESIS_SOURCES)))

    def trial_params(self, default_mode: str, modes: list[str]) -> dict:
        return {**super().trial_params(default_mode, modes), "per_query_k": self.k, "merge_policy": self.merge,
                "hypothesis_from": self.hypothesis_from}


class HCQR(MCQProgram):
    method = "hcqr"
    estimated_calls = 3.0  # hypothesis, rewrite, answer
    Config = HCQRConfig
    default_sees_options = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.queries = tuple(q for q in QUERY_FIELDS if q in self.config.queries)
        self.per_query_k = self.config.k
        self.merge_policy = self.config.merge
        self.show_hypothesis = self.config.show_hypothesis
        self.paper = self.config.own_rules.hypothesis_by_elimination
        self.hypothesize = self.step(HypothesizeByElimination if self.paper else Hypothesize)
        self.rewrite = self.step(QueriesFromHypothesis if self.paper else RewriteQueries)
        self.doubt = self.step(QueriesForDoubt)

    @classmethod
    def wants_closed_book(cls, config: HCQRConfig) -> bool:
        return config.hypothesis_from == "reader"

    @classmethod
    def retrieval_calls(cls, config: HCQRConfig) -> float:
        """Hypothesis and rewrite; from the reader's doubt, one query call."""
        return 1.0 if config.hypothesis_from == "reader" else 2.0

    def effective_settings(self) -> dict:
        return {**self.settings(), "per_query_k": self.per_query_k, "merge_policy": self.merge_policy}

    def retrieve(self, question: str, options: dict[str, str], meter: CostMeter, trace: Trace) -> list[Hit]:
        if self.config.hypothesis_from == "reader":
            torn = torn_between(trace.closed_book.distribution if trace.closed_book else None)
            if torn is not None:
                return self.retrieve_for_doubt(question, options, torn, meter, trace)
            trace.fell_back("reader_hypothesis", "no option probabilities to find the reader's doubt: generated")
        shown = self.retrieval_options(options)
        hypothesis = self.query_step(self.hypothesize, meter, trace, question=question, options=shown)
        if self.paper:  # the rewriter sees the question and the hypothesis state, not the option list
            state = self._paper_state(hypothesis)
            described = self._describe_paper(state)
            rewritten = self.query_step(self.rewrite, meter, trace, question=question, hypothesis=described)
        else:
            state = {
                "likely_option": getattr(hypothesis, "likely_option", "") or "",
                "discriminating_features": list(getattr(hypothesis, "discriminating_features", None) or []),
                "expected_evidence": getattr(hypothesis, "expected_evidence", "") or "",
                "rationale": getattr(hypothesis, "rationale", "") or "",
            }
            described = self._describe(state, options)
            rewritten = self.query_step(self.rewrite, meter, trace, question=question, options=shown,
                                        hypothesis=described)
        trace.hypothesis = Hypothesis(described, option_of_letter(state["likely_option"], options), state)
        queries = [str(getattr(rewritten, QUERY_FIELDS[name], None) or question) for name in self.queries]
        trace.queries.extend(queries)
        ranked = self.retriever.search_many(queries, self.per_query_k, mode=self.mode)
        return merge_to_budget(ranked, self.budget, self.merge_policy,
                               normalize=(self.mode or self.retriever.mode) == "bm25")

    def retrieve_for_doubt(self, question: str, options: dict[str, str], torn: list[tuple[str, float]],
                           meter: CostMeter, trace: Trace) -> list[Hit]:
        """The same three kinds of query for each option the reader is torn between, one call, merged to the
        budget: evidence for each (in the options' order), what distinguishes them, the clues that decide."""
        letters = sorted(o for o, _ in torn)
        written = self.query_step(self.doubt, meter, trace, question=question, torn=torn_lines(torn, options))
        evidence = [str(q) for q in (getattr(written, "evidence_queries", None) or [])]
        queries = [evidence[i] if i < len(evidence) and evidence[i].strip() else f"{question} {options[o]}"
                   for i, o in enumerate(letters)]
        queries += [str(getattr(written, name, None) or question) for name in ("distinction_query", "clues_query")]
        trace.hypothesis = doubt_hypothesis(torn, options)
        trace.queries.extend(queries)
        ranked = self.retriever.search_many(queries, self.per_query_k, mode=self.mode)
        return merge_to_budget(ranked, self.budget, self.merge_policy,
                               normalize=(self.mode or self.retriever.mode) == "bm25")

    @staticmethod
    def _paper_state(hypothesis) -> dict:
        def text(name: str) -> str:
            return str(getattr(hypothesis, name, "") or "")

        return {"likely_option": text("best_guess"), "best_guess_text": text("best_guess_text"),
                "discriminating_features": list(getattr(hypothesis, "discriminating_features", None) or []),
                "confirming_evidence": list(getattr(hypothesis, "confirming_evidence", None) or []),
                "rationale": text("reasoning"), "alternative": text("alternative"), "elimination": text("elimination")}

    @staticmethod
    def _describe_paper(state: dict) -> str:
        return (f"Hypothesised answer: {state['best_guess_text'] or state['likely_option']}. Reasoning: "
                f"{state['rationale']}. Confirming evidence: {'; '.join(map(str, state['confirming_evidence']))}. "
                f"Discriminating features: {'; '.join(map(str, state['discriminating_features']))}")

    @staticmethod
    def _describe(state: dict, options: dict[str, str]) -> str:
        letter = str(state["likely_option"]).strip().upper()[:1]
        option = f"{letter}. {options[letter]}" if letter in options else str(state["likely_option"])
        features = "; ".join(map(str, state["discriminating_features"]))
        return f"Likely: {option}. Features: {features}. Expected evidence: {state['expected_evidence']}"

    def context_preface(self, trace: Trace) -> str:
        if not self.show_hypothesis or not trace.hypothesis:
            return ""
        state = trace.hypothesis.details
        return f"Working hypothesis (unverified): {state['likely_option']}: {state['rationale']}"
