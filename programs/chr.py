"""CHR: contrastive hypothesis retrieval.

One LM call gives H+ (the likely answer) and H− (the most plausible wrong answer), both as statements; passages are
ranked by sim(d,H+) − λ·sim(d,H−), one query vector on a dense index. λ is fixed or set per question from
cos(ĥ+, ĥ−) by a schedule (linear, threshold, sigmoid). A mimic that is missing or (nearly) the target itself is a
degenerate contrast: retrieval falls back to H+ alone and the row records why.

With `hypothesis_from="reader"` the two hypotheses are the two options the reader's closed-book answer is most torn
between, stated as facts in one call, and retrieval is symmetric: half the budget for each against the other (H+
that option, H− the other, λ unchanged), so the passages can favour either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from hyporag.lm.cost import CostMeter
from hyporag.programs.base import MCQProgram, Trace
from hyporag.programs.config import ProgramConfig, flag, hypothesis_from_flag
from hyporag.programs.hypothesis import (
    HYPOTHESIS_SOURCES,
    Hypothesis,
    doubt_hypothesis,
    option_named_in,
    torn_between,
    torn_lines,
)
from hyporag.retrieval.hit import Hit
from hyporag.retrieval.lambda_schedule import SCHEDULES, LambdaSchedule
from hyporag.retrieval.query import WeightedQuery
from hyporag.signatures import ContrastiveHypotheses, StatementsForDoubt
from hyporag.signatures.paper_protocol import SpecialistContrastiveHypotheses

DEGENERATE_SIMILARITY = 0.95


def _normalised(text: str) -> str:
    return " ".join(text.lower().split()).strip(" .")


def hypothesis_similarity(h_plus: str, h_minus: str, vectors: np.ndarray | None) -> float:
    """cos(ĥ+, ĥ−) from their vectors, or token Jaccard without them (a BM25-only index: no encoder call)."""
    if vectors is not None:
        return float(np.dot(vectors[0], vectors[1]))
    tokens_a, tokens_b = set(h_plus.lower().split()), set(h_minus.lower().split())
    return len(tokens_a & tokens_b) / max(1, len(tokens_a | tokens_b))


def degenerate_contrast(h_plus: str, h_minus: str, similarity: float | None) -> str | None:
    """Why H− cannot contrast with H+, or None when it can: no mimic, the same statement, or a similarity at or
    above DEGENERATE_SIMILARITY (cosine of the embeddings; token Jaccard on a BM25-only index), where λ·ĥ− would
    cancel most of ĥ+ and the query vector would point at noise."""
    if not h_minus.strip():
        return "no mimic"
    if _normalised(h_plus) == _normalised(h_minus):
        return "identical"
    if similarity is not None and similarity >= DEGENERATE_SIMILARITY:
        return f"near-identical (similarity {similarity:.3f})"
    return None


@dataclass(frozen=True)
class CHRRules:
    """CHR's rules under a protocol."""

    specialist_hypotheses: bool  # the paper's one call, in a specialist's voice


CHR_RULES = {"fast": CHRRules(False), "paper": CHRRules(True)}


@dataclass(frozen=True)
class CHRConfig(ProgramConfig):
    """CHR's own settings: λ fixed (the paper's default, 1.0) or one of our adaptive schedules over cos(ĥ+, ĥ−)."""

    method: ClassVar[str] = "chr"
    protocol_rules: ClassVar[dict[str, CHRRules]] = CHR_RULES

    schedule: str = flag("--schedule", "CHR: λ schedule over cos(H+, H-) (fixed is the paper's)", choices=SCHEDULES,
                         default="fixed")
    lam: float = flag("--lam", "CHR: the fixed λ", default=1.0)
    lam_min: float = flag("--lam-min", "CHR: adaptive schedules' lowest λ", default=0.0)
    lam_max: float = flag("--lam-max", "CHR: adaptive schedules' highest λ", default=1.0)
    tau: float = flag("--tau", "CHR: threshold/sigmoid midpoint of the similarity", default=0.7)
    steepness: float = flag("--steepness", "CHR: sigmoid steepness", default=10.0)
    hypothesis_from: str = hypothesis_from_flag()

    def check(self) -> None:
        super().check()
        _ = self.lambda_schedule  # LambdaSchedule refuses an unknown kind

    @classmethod
    def normalize(cls, data: dict) -> dict:
        """`schedule=LambdaSchedule(...)`, the object form of the same settings, becomes its fields."""
        schedule = data.get("schedule")
        if isinstance(schedule, LambdaSchedule):
            data.update({"schedule" if k == "kind" else k: v for k, v in schedule.to_dict().items()})
        elif isinstance(schedule, dict):
            data.update({"schedule" if k == "kind" else k: v for k, v in schedule.items()})
        return data

    @property
    def lambda_schedule(self) -> LambdaSchedule:
        return LambdaSchedule(self.schedule, lam=self.lam, lam_min=self.lam_min, lam_max=self.lam_max,
                              tau=self.tau, steepness=self.steepness)

    def suggest(self, trial, modes: list[str]) -> CHRConfig:
        config = super().suggest(trial, modes).replace(
            hypothesis_from=trial.suggest_categorical("hypothesis_from", list(HYPOTHESIS_SOURCES)))
        kind = trial.suggest_categorical("schedule", list(SCHEDULES))
        if kind == "fixed":
            return config.replace(schedule=kind, lam=trial.suggest_float("lam", 0.0, 2.0))
        return config.replace(schedule=kind, lam_min=trial.suggest_float("lam_min", 0.0, 0.5),
                              lam_max=trial.suggest_float("lam_max", 0.5, 2.0),
                              tau=trial.suggest_float("tau", 0.3, 0.95),
                              steepness=trial.suggest_float("steepness", 2.0, 20.0))

    def trial_params(self, default_mode: str, modes: list[str]) -> dict:
        params = {**super().trial_params(default_mode, modes), "hypothesis_from": self.hypothesis_from,
                  "schedule": self.schedule}
        if self.schedule == "fixed":
            return {**params, "lam": self.lam}
        return {**params, "lam_min": self.lam_min, "lam_max": self.lam_max, "tau": self.tau,
                "steepness": self.steepness}


class CHR(MCQProgram):
    method = "chr"
    estimated_calls = 2.0  # H+ and H- in one call, then the answer
    Config = CHRConfig
    default_sees_options = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.schedule = self.config.lambda_schedule
        specialist = self.config.own_rules.specialist_hypotheses  # the paper's one call, in a specialist's voice
        self.hypotheses = self.step(SpecialistContrastiveHypotheses if specialist else ContrastiveHypotheses)
        self.doubt = self.step(StatementsForDoubt)

    @classmethod
    def wants_closed_book(cls, config: CHRConfig) -> bool:
        return config.hypothesis_from == "reader"

    def retrieve(self, question: str, options: dict[str, str], meter: CostMeter, trace: Trace) -> list[Hit]:
        if self.config.hypothesis_from == "reader":
            torn = torn_between(trace.closed_book.distribution if trace.closed_book else None, most=2)
            if torn is not None:
                return self.retrieve_for_doubt(question, options, torn, meter, trace)
            trace.fell_back("reader_hypothesis", "no option probabilities to find the reader's doubt: generated")
        result = self.query_step(self.hypotheses, meter, trace, question=question,
                                 options=self.retrieval_options(options))
        h_plus = str(getattr(result, "target_hypothesis", None) or question)
        h_minus = str(getattr(result, "mimic_hypothesis", None) or "")
        mode = self.mode or self.retriever.mode
        # one encoder call for the similarity and the query vector (none when BM25 alone needs no similarity)
        vectors = self.retriever.encode([h_plus, h_minus]) if mode != "bm25" or self.schedule.kind != "fixed" \
            else None
        similarity = hypothesis_similarity(h_plus, h_minus, vectors) if h_minus.strip() else None
        lam = self.schedule(similarity if similarity is not None else 0.0)
        fallback = degenerate_contrast(h_plus, h_minus, similarity)
        trace.hypothesis = Hypothesis(h_plus, option_named_in(h_plus, options),
                                      {"target": h_plus, "mimic": h_minus, "similarity": similarity, "lambda": lam})
        trace.queries.extend([h_plus, h_minus])
        if fallback:  # H+ − λ·H− would cancel and retrieve noise: search with H+ alone, and say so in the row
            trace.fell_back("contrast", fallback)
            return self.retriever.search(h_plus, self.budget, mode=self.mode)
        query = WeightedQuery.difference(h_plus, h_minus, lam, vectors=vectors)
        return self.retriever.search_weighted([query], self.budget, mode=self.mode)[0]

    def retrieve_for_doubt(self, question: str, options: dict[str, str], torn: list[tuple[str, float]],
                           meter: CostMeter, trace: Trace) -> list[Hit]:
        """Each of the two options the reader is torn between stated as a fact (one call), then half the budget for
        each against the other: H+ that option, H− the other, the schedule's λ."""
        letters = sorted(o for o, _ in torn)
        written = self.query_step(self.doubt, meter, trace, question=question, torn=torn_lines(torn, options))
        said = [str(x) for x in (getattr(written, "statements", None) or [])]
        statements = [said[i] if i < len(said) and said[i].strip() else f"{question} {options[o]}"
                      for i, o in enumerate(letters)]
        mode = self.mode or self.retriever.mode
        vectors = self.retriever.encode(statements) if mode != "bm25" or self.schedule.kind != "fixed" else None
        similarity = hypothesis_similarity(*statements, vectors)
        lam = self.schedule(similarity)
        trace.hypothesis = doubt_hypothesis(torn, options, statements=statements, similarity=similarity, **{
            "lambda": lam})
        trace.queries.extend(statements)
        halves = [self.budget - self.budget // 2, self.budget // 2]
        seen, hits = set(), []
        for first, (share, target, other) in enumerate(zip(halves, statements, reversed(statements), strict=True)):
            pair = None if vectors is None else vectors[[first, 1 - first]]
            query = WeightedQuery.difference(target, other, lam, vectors=pair)
            found = self.retriever.search_weighted([query], self.budget, mode=self.mode)[0]
            kept = [h for h in found if h.id not in seen][:share]
            seen.update(h.id for h in kept)
            hits.extend(kept)
        return hits
