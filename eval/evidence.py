"""An LLM-free evidence signal: does the context contain the gold option's text, or a distractor's?"""

from __future__ import annotations

import re
from collections.abc import Iterable


def normalise(text: str) -> str:
    """Lowercase, punctuation to spaces, padded so matches fall on word boundaries."""
    return " " + re.sub(r"[^a-z0-9]+", " ", text.lower()).strip() + " "


def option_evidence(options: dict[str, str], gold: str, passages: Iterable[str]) -> dict[str, bool]:
    context = normalise(" ".join(passages))
    return {
        "gold_in_context": normalise(options[gold]) in context,
        "distractor_in_context": any(normalise(t) in context for letter, t in options.items() if letter != gold),
    }


def hypothesis_option(hypothesis: dict | None, options: dict[str, str]) -> str | None:
    """The option a program's hypothesis names: HCQR's `likely_option` letter, or for CHR the one option whose
    text appears in H+ (None when no option or more than one does: H+ is a statement, not a letter)."""
    if not hypothesis:
        return None
    letter = str(hypothesis.get("likely_option") or "").strip().upper()[:1]
    if letter in options:
        return letter
    target = hypothesis.get("target")
    if target:
        text = normalise(str(target))
        named = [k for k, option in options.items() if normalise(option) in text]
        return named[0] if len(named) == 1 else None
    return None
