"""Refuse, before any LM call, a question whose answer prompt cannot fit the answer model's context window.

The bound is the worst case a program can reach: its answer prompt (instruction, demos, question, options) with
the B longest passages of its index, plus the tokens reserved for the reply. The prompt's fixed part is counted
once per program and option letters; each question then adds only its own text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import dspy

from hyporag.errors import DataError
from hyporag.programs.answer_step import format_context
from hyporag.programs.context_window import ContextWindow
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
        passages = f" with B={programs[name].budget} passages" if programs[name].uses_retrieval else ""
        message = (f"{where(example)}: question is {about}{own} tokens, the model's context is {window.limit} "
                   f"({name}'s answer prompt{passages} needs up to {about}{total}, {reply_tokens} of them for the "
                   "reply)")
        if not skip_bad_rows:
            raise DataError(message + "; shorten it, lower --budget, or use --skip-bad-rows")
        skipped.append(message)
    return FitReport(kept, skipped)
