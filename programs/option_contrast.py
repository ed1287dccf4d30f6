"""Option-contrast: retrieval for each option, contrasted with the others, with no hypothesis call.

For each option X the query is the question with X, minus λ times the mean of the question with each other
option (one weighted query, as CHR's H+ − λ·H−); the budget B is split evenly across the options (B = 4 over
four options is one passage each) by merging the lists round robin without duplicates, and the common answer
step reads them. It costs what `rag` costs in LM calls: the answer call only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from hyporag.lm.cost import CostMeter
from hyporag.programs.base import MCQProgram, Trace
from hyporag.programs.config import ProgramConfig, flag
from hyporag.retrieval.hit import Hit
from hyporag.retrieval.merge import merge_to_budget
from hyporag.retrieval.query import WeightedQuery


@dataclass(frozen=True)
class OptionContrastConfig(ProgramConfig):
    method: ClassVar[str] = "option-contrast"

    contrast_lam: float = flag("--contrast-lam", "option-contrast: λ on the mean of the other options' queries "
                               "(0: each option's query alone)", default=1.0,
                               rule=lambda v: None if v >= 0 else f"contrast_lam must be a number >= 0, got {v!r}")

    def check(self) -> None:
        super().check()
        if self.retrieval_sees_options is False:
            self.refuse("retrieval_sees_options", "option-contrast's queries are the options, so it cannot run "
                        "question-only")

    def suggest(self, trial, modes: list[str]) -> OptionContrastConfig:
        return super().suggest(trial, modes).replace(contrast_lam=trial.suggest_float("contrast_lam", 0.0, 2.0))

    def trial_params(self, default_mode: str, modes: list[str]) -> dict:
        return {**super().trial_params(default_mode, modes), "contrast_lam": self.contrast_lam}


class OptionContrast(MCQProgram):
    method = "option-contrast"
    estimated_calls = 1.0  # the answer call only
    Config = OptionContrastConfig
    default_sees_options = True  # its queries are the options: it cannot run question-only

    def retrieve(self, question: str, options: dict[str, str], meter: CostMeter, trace: Trace) -> list[Hit]:
        per_option = {letter: f"{question} {text}" for letter, text in options.items()}
        queries = [WeightedQuery.difference(text, [t for other, t in per_option.items() if other != letter],
                                            self.config.contrast_lam)
                   for letter, text in per_option.items()]
        trace.queries.extend(per_option.values())
        # each list as deep as the budget: round robin takes every option's rank 1, then rank 2, ..., so B is split
        # evenly, and a passage two options share is replaced by the next one down instead of leaving a gap
        ranked = self.retriever.search_weighted(queries, self.budget, mode=self.mode)
        return merge_to_budget(ranked, self.budget, "round_robin")
