"""CHR: contrastive hypothesis retrieval.

One LM call gives H+ (the likely answer) and H− (the most plausible wrong answer), both as statements; passages are
ranked by sim(d,H+) − λ·sim(d,H−), one query vector on a dense index. λ is fixed or set per question from
cos(ĥ+, ĥ−) by a schedule (linear, threshold, sigmoid). A mimic that is missing or (nearly) the target itself is a
degenerate contrast: retrieval falls back to H+ alone and the row records why.
"""

from __future__ import annotations

import dspy

from hyporag.programs.base import MCQProgram, Trace
from hyporag.programs.cost import CostMeter
from hyporag.retrieval.hit import Hit
from hyporag.retrieval.lambda_schedule import LambdaSchedule
from hyporag.signatures import ContrastiveHypotheses

DEGENERATE_SIMILARITY = 0.95


def _normalised(text: str) -> str:
    return " ".join(text.lower().split()).strip(" .")


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


class CHR(MCQProgram):
    method = "chr"
    default_sees_options = True

    def __init__(self, *args, schedule: LambdaSchedule | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.schedule = schedule or LambdaSchedule()
        self.hypotheses = dspy.Predict(ContrastiveHypotheses)

    def retrieve(self, question: str, options: dict[str, str], meter: CostMeter, trace: Trace) -> list[Hit]:
        result = self.query_step(self.hypotheses, meter, trace, question=question,
                                 options=self.retrieval_options(options))
        h_plus = str(getattr(result, "target_hypothesis", None) or question)
        h_minus = str(getattr(result, "mimic_hypothesis", None) or "")
        mode = self.mode or self.retriever.mode
        vectors = None
        if self.retriever.dense is not None and (mode != "bm25" or self.schedule.kind != "fixed"):
            vectors = self.retriever.hypothesis_vectors(h_plus, h_minus)  # one encoder call for everything below
        similarity = self.retriever.hypothesis_similarity(h_plus, h_minus, vectors) if h_minus.strip() else None
        lam = self.schedule(similarity if similarity is not None else 0.0)
        fallback = degenerate_contrast(h_plus, h_minus, similarity)
        trace.hypothesis = {"target": h_plus, "mimic": h_minus, "similarity": similarity, "lambda": lam}
        trace.queries.extend([h_plus, h_minus])
        if fallback:  # H+ − λ·H− would cancel and retrieve noise: search with H+ alone, and say so in the row
            trace.extra["contrast_fallback"] = fallback
            return self.retriever.search(h_plus, self.budget, mode=self.mode)
        return self.retriever.search_contrastive(h_plus, h_minus, lam, self.budget, mode=self.mode, vectors=vectors)

    def settings(self) -> dict:
        return {**super().settings(), "schedule": self.schedule.to_dict()}
