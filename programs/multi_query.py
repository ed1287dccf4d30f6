"""The papers' "Rewriting" baseline: three rephrasings of the question (MMLF's multi-query rewrite), B // 3
passages each, merged to the budget. Today's one-query rewrite stays as `rewrite-single`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from hyporag.lm.cost import CostMeter
from hyporag.programs.base import MCQProgram, Trace
from hyporag.programs.config import ProgramConfig
from hyporag.retrieval.hit import Hit
from hyporag.retrieval.merge import merge_to_budget
from hyporag.signatures import RephraseQuestion

REPHRASINGS = 3


@dataclass(frozen=True)
class MultiQueryConfig(ProgramConfig):
    method: ClassVar[str] = "rewrite"


class MultiQueryRewriting(MCQProgram):
    """Three rephrasings in one LM call, searched in one batch, B // 3 each (at least 1), merged round robin."""

    method = "rewrite"
    Config = MultiQueryConfig

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rephrase = self.step(RephraseQuestion)

    def retrieve(self, question: str, options: dict[str, str], meter: CostMeter, trace: Trace) -> list[Hit]:
        result = self.query_step(self.rephrase, meter, trace, question=question,
                                 options=self.retrieval_options(options))
        queries = [str(q).strip() for q in (getattr(result, "queries", None) or []) if str(q).strip()]
        queries = (queries + [question] * REPHRASINGS)[:REPHRASINGS]  # a short list is padded with the question
        trace.queries.extend(queries)
        per_query = max(1, self.budget // REPHRASINGS)
        ranked = self.retriever.search_many(queries, per_query, mode=self.mode)
        return merge_to_budget(ranked, self.budget, "round_robin")
