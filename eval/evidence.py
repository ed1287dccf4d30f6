"""An LLM-free evidence signal: does the context contain the gold option's text, or a distractor's?"""

from __future__ import annotations

from collections.abc import Iterable

from hyporag.programs.hypothesis import normalise


def option_evidence(options: dict[str, str], gold: str, passages: Iterable[str]) -> dict[str, bool]:
    context = normalise(" ".join(passages))
    return {
        "gold_in_context": normalise(options[gold]) in context,
        "distractor_in_context": any(normalise(t) in context for letter, t in options.items() if letter != gold),
    }
