"""DSPy signatures: one step each; the docstring is the instruction. Passages always come last in the inputs,
so a question's calls share a cached prompt prefix on llama.cpp."""

from hyporag.signatures.answer_question import AnswerQuestion, format_options, with_letters
from hyporag.signatures.baselines import HypotheticalDocument, Query2Doc, RephraseQuestion, Rerank, RewriteQuery
from hyporag.signatures.contrastive_hypotheses import ContrastiveHypotheses
from hyporag.signatures.doubt import QueriesForDoubt, StatementsForDoubt
from hyporag.signatures.hypothesize import Hypothesize
from hyporag.signatures.judge_context_utility import JudgeContextUtility
from hyporag.signatures.rewrite_queries import RewriteQueries

__all__ = [
    "AnswerQuestion",
    "ContrastiveHypotheses",
    "HypotheticalDocument",
    "Hypothesize",
    "JudgeContextUtility",
    "QueriesForDoubt",
    "Query2Doc",
    "RephraseQuestion",
    "Rerank",
    "RewriteQueries",
    "RewriteQuery",
    "StatementsForDoubt",
    "format_options",
    "with_letters",
]
