"""CHR: contrastive hypothesis retrieval.

One LM call gives H+ (the likely answer) and H− (the most plausible wrong answer), both as statements; passages are
ranked by sim(d,H+) − λ·sim(d,H−), one query vector on a dense index. λ is fixed or set per question from
cos(ĥ+, ĥ−) by a schedule (linear, threshold, sigmoid).
"""

from __future__ import annotations

import dspy

from hyporag.programs.base import MCQProgram, Trace
from hyporag.programs.cost import CostMeter
from hyporag.retrieval.hit import Hit
from hyporag.retrieval.lambda_schedule import LambdaSchedule
from hyporag.signatures import ContrastiveHypotheses


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
        vectors = similarity = None
        if self.schedule.kind != "fixed":  # one encoder call serves both the similarity and the query vector
            vectors = self.retriever.hypothesis_vectors(h_plus, h_minus)
            similarity = self.retriever.hypothesis_similarity(h_plus, h_minus, vectors)
        lam = self.schedule(similarity if similarity is not None else 0.0)
        trace.hypothesis = {"target": h_plus, "mimic": h_minus, "similarity": similarity, "lambda": lam}
        trace.queries.extend([h_plus, h_minus])
        if not h_minus.strip():
            return self.retriever.search(h_plus, self.budget, mode=self.mode)
        return self.retriever.search_contrastive(h_plus, h_minus, lam, self.budget, mode=self.mode, vectors=vectors)

    def settings(self) -> dict:
        return {**super().settings(), "schedule": self.schedule.to_dict()}
