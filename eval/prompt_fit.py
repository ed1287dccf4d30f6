"""Refuse, before any LM call, a question whose answer prompt cannot fit the answer model's context window.

The bound is the worst case a program can reach: its answer prompt (instruction, demos, question, options) with
the B longest passages of its index, plus the tokens reserved for the reply. The prompt's fixed part is counted
once per program and option letters; each question then adds only its own text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import dspy

from hyporag.foundation.errors import DataError
from hyporag.lm.context_window import ContextWindow
from hyporag.programs.answer_step import format_context
from hyporag.retrieval.hit import Hit
from hyporag.signatures import format_options, with_letters


@dataclass
class FitReport:
    """The questions that fit, the refusals of those skipped (`--skip-bad-rows`), and whether a check ran."""

    kept: list
    skipped: list[str] = field(default_factory=list)
    checked: bool = True


def _adapter(program) -> dspy.Adapter:
    roles = getattr(program, "roles", None)
    return roles.answer.adapter if roles is not None else (dspy.settings.adapter or dspy.ChatAdapter())


def _worst_context(program) -> str:
    retriever = getattr(program, "retriever", None)
    if not getattr(program, "uses_retrieval", False) or retriever is None:
        return format_context([])
    longest = retriever.store.longest(program.budget)
    return format_context([Hit(p.id, p.title, p.contents, 0.0) for p in longest])


class PromptFit:
    """Counts one program's largest answer prompt for a question in a given context window."""

    def __init__(self, program, window: ContextWindow, reply_tokens: int):
        self.program, self.window, self.reply_tokens = program, window, reply_tokens
        self.predictor = program.answer.predict.predict if program.answer.reasoning else program.answer.predict
        self.context = _worst_context(program)
        self._fixed: dict[tuple[str, ...], int] = {}

    def fixed_tokens(self, letters: tuple[str, ...]) -> int:
        if letters not in self._fixed:
            signature = with_letters(self.predictor.signature, letters)
            messages = _adapter(self.program).format(signature, demos=list(self.predictor.demos),
                                                     inputs={"question": "", "options": "", "context": self.context})
            self._fixed[letters] = self.window.messages_tokens(messages) + self.reply_tokens
        return self._fixed[letters]

    def explain(self, own: int, total: int, reply_tokens: int, about: str) -> str:
        """Why the prompt does not fit, naming the part that does not: the question, or the index's passages."""
        program = self.program
        text = (f"{program.method}'s answer prompt needs up to {about}{total} tokens, the model's context is "
                f"{self.window.limit} (question and options {about}{own}, reply {reply_tokens}")
        retriever = getattr(program, "retriever", None)
        if getattr(program, "uses_retrieval", False) and retriever is not None:
            longest = retriever.store.longest(1)[0]
            text += (f", the {program.budget} longest passages of the index {about}{self.window.count(self.context)}; "
                     f"longest {longest.id!r} ({longest.title[:60]!r}, "
                     f"{about}{self.window.count(longest.title + ' ' + longest.contents)} tokens)")
        return text + ")"

    def needed(self, question: str, options: dict[str, str]) -> tuple[int, int]:
        """(tokens of the question and its options, tokens the whole call may need)."""
        own = self.window.count(question) + self.window.count(format_options(options))
        return own, own + self.fixed_tokens(tuple(options))


def check_prompts_fit(examples: list, where, programs: dict, window: ContextWindow, reply_tokens: int,
                      skip_bad_rows: bool = False) -> FitReport:
    """Every example whose largest prompt fits `window`; the first that does not raises a DataError naming its
    file and line (`where(example)`), unless `skip_bad_rows`, which skips and counts it."""
    if window.limit is None:
        return FitReport(list(examples), checked=False)
    fits = {name: PromptFit(p, window, reply_tokens) for name, p in programs.items() if hasattr(p, "answer")}
    kept, skipped = [], []
    about = "" if window.exact else "about "
    for example in examples:
        worst = max(((name, *fit.needed(example.question, example.options)) for name, fit in fits.items()),
                    key=lambda item: item[2], default=None)
        if worst is None or worst[2] <= window.limit:
            kept.append(example)
            continue
        name, own, total = worst
        fit = fits[name]
        message = f"{where(example)}: {fit.explain(own, total, reply_tokens, about)}"
        if not skip_bad_rows:
            raise DataError(message + ("; shorten the question, or use --skip-bad-rows" if own + reply_tokens >=
                                       window.limit else "; lower --budget (at fit/compile time for a frozen program), "
                                       "or use --skip-bad-rows"))
        skipped.append(message)
    return FitReport(kept, skipped)
