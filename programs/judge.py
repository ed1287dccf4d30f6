"""The decision-useful-rate judge: one listwise call per question labels the whole final context.

Entailed / Useful count as decision-useful (DUR = Entailed + Useful). Judging the context as a list, not passage by
passage, keeps the cost at one call per question (15 otherwise); identical contexts hit DSPy's cache.
"""

from __future__ import annotations

from collections.abc import Sequence

import dspy

from hyporag.foundation.judge_labels import LABELS
from hyporag.lm.cost import CostMeter
from hyporag.programs.answer_step import format_context
from hyporag.retrieval.hit import Hit
from hyporag.signatures import JudgeContextUtility, format_options


class ContextJudge(dspy.Module):
    def __init__(self, role=None):
        super().__init__()
        self.role = role
        self.judge = dspy.Predict(JudgeContextUtility)

    def forward(self, question: str, options: dict[str, str], answer: str, passages: Sequence[dict]) -> dspy.Prediction:
        meter = CostMeter()
        hits = [Hit(p["id"], p.get("title", ""), p.get("contents", ""), p.get("score", 0.0)) for p in passages]
        context = self.role.context() if self.role is not None else dspy.context()
        with meter.step("judge"), context:
            result = self.judge(question=question, options=format_options(options),
                                gold_answer=f"{answer}. {options[answer]}", context=format_context(hits))
        label = result.label if result.label in LABELS else "NotUseful"
        return dspy.Prediction(label=label, reason=str(result.reason or "")[:300], cost=meter.as_dict())
