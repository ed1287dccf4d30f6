"""Baselines from the papers: no-retrieval CoT, simple RAG, rerank-RAG, one rewritten query, HyDE, Query2doc."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from hyporag.lm.cost import CostMeter
from hyporag.programs.base import MCQProgram, Trace
from hyporag.programs.config import ProgramConfig, flag
from hyporag.programs.cross_encoder import CrossEncoderReranker
from hyporag.programs.hypothesis import Hypothesis
from hyporag.retrieval.hit import Hit
from hyporag.retrieval.query import WeightedQuery
from hyporag.signatures import HypotheticalDocument, Query2Doc, Rerank, RewriteQuery


@dataclass(frozen=True)
class RerankConfig(ProgramConfig):
    method: ClassVar[str] = "rerank"

    pool: int | None = flag("--rerank-pool", "rerank: candidates retrieved before reranking (default 2×B)")
    snippet_chars: int = 300  # of each candidate, shown to the LM judgment
    cross_encoder: str | None = flag("--cross-encoder", "rerank: a sentence-transformers CrossEncoder name or path "
                                     "(the HCQR authors: BAAI/bge-reranker-v2-m3); default an LM judgment")


@dataclass(frozen=True)
class HyDEConfig(ProgramConfig):
    method: ClassVar[str] = "hyde"

    num_documents: int = flag("--hyde-docs", "HyDE: hypothetical documents per question", default=1)


class CoT(MCQProgram):
    """No retrieval: the answer step alone (the floor every retrieval method must beat)."""

    method = "cot"
    estimated_calls = 1.0
    uses_retrieval = False

    def __init__(self, retriever=None, **kwargs):
        super().__init__(retriever=None, **kwargs)


class SimpleRAG(MCQProgram):
    """The question (MIRAGE's question-only rule by default) as the query; top-B passages."""

    method = "rag"
    estimated_calls = 1.0

    def retrieve(self, question: str, options: dict[str, str], meter: CostMeter, trace: Trace) -> list[Hit]:
        query = self.plain_query(question, options)
        trace.queries.append(query)
        return self.retriever.search(query, self.budget, mode=self.mode)


class RerankRAG(MCQProgram):
    """Retrieve a deeper pool, then rerank to B with an LM judgment (or a cross-encoder passed as `reranker`)."""

    method = "rerank"

    Config = RerankConfig

    def __init__(self, *args, reranker: Callable[[str, list[Hit]], list[Hit]] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.pool = self.config.pool or 2 * self.budget
        if reranker is None and self.config.cross_encoder:
            reranker = CrossEncoderReranker(self.config.cross_encoder)
        self.reranker = reranker
        self.snippet_chars = self.config.snippet_chars
        self.rerank = self.step(Rerank)

    def retrieve(self, question: str, options: dict[str, str], meter: CostMeter, trace: Trace) -> list[Hit]:
        query = self.plain_query(question, options)
        trace.queries.append(query)
        pool = self.retriever.search(query, self.pool, mode=self.mode)
        if self.reranker is not None:
            ranked = self.reranker(query, pool)
            trace.extra["reranked"] = [h.id for h in ranked[: self.budget]]
            return ranked[: self.budget]
        numbered = "\n".join(f"[{i}] {h.contents[: self.snippet_chars]}" for i, h in enumerate(pool, start=1))
        picked = self.query_step(self.rerank, meter, trace, question=question,
                                 options=self.retrieval_options(options), passages=numbered)
        order: list[Hit] = []
        for number in (picked.useful_passages or []) if picked is not None else []:
            if isinstance(number, int) and 1 <= number <= len(pool) and pool[number - 1] not in order:
                order.append(pool[number - 1])
        order += [h for h in pool if h not in order]  # keep retrieval order for the rest of the budget
        trace.extra["reranked"] = [h.id for h in order[: self.budget]]
        return order


class Rewriting(MCQProgram):
    """One LM-rewritten query (`rewrite-single`); the papers' "Rewriting" is the multi-query `rewrite`."""

    method = "rewrite-single"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rewrite = self.step(RewriteQuery)

    def retrieve(self, question: str, options: dict[str, str], meter: CostMeter, trace: Trace) -> list[Hit]:
        result = self.query_step(self.rewrite, meter, trace, question=question,
                                 options=self.retrieval_options(options))
        query = str(result.query or question) if result is not None else question
        trace.queries.append(query)
        return self.retriever.search(query, self.budget, mode=self.mode)


class HyDE(MCQProgram):
    """Hypothetical documents: generate N passages, search with the mean of their and the question's vectors."""

    method = "hyde"

    Config = HyDEConfig

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.num_documents = self.config.num_documents
        self.generate = self.step(HypotheticalDocument)

    def retrieve(self, question: str, options: dict[str, str], meter: CostMeter, trace: Trace) -> list[Hit]:
        documents = []
        for i in range(self.num_documents):
            config = {"rollout_id": i, "temperature": 0.7} if self.num_documents > 1 else {}
            result = self.query_step(self.generate, meter, trace, question=question,
                                     options=self.retrieval_options(options), config=config)
            if result is not None and result.passage:
                documents.append(str(result.passage))
        trace.queries.extend(documents)
        trace.hypothesis = Hypothesis("\n\n".join(documents), None, {"documents": documents})
        return self.retriever.search_weighted([WeightedQuery.mean([question, *documents])], self.budget,
                                              mode=self.mode)[0]


class Query2DocRAG(MCQProgram):
    """Query2doc: one pseudo-document appended to the question forms the query."""

    method = "q2d"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.expand = self.step(Query2Doc)

    def retrieve(self, question: str, options: dict[str, str], meter: CostMeter, trace: Trace) -> list[Hit]:
        result = self.query_step(self.expand, meter, trace, question=question, options=self.retrieval_options(options))
        document = str(result.pseudo_document or "") if result is not None else ""
        query = f"{question} {document}".strip()
        trace.queries.append(query)
        trace.hypothesis = Hypothesis(document, None, {"pseudo_document": document})
        return self.retriever.search(query, self.budget, mode=self.mode)
