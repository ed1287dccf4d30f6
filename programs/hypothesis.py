"""A program's working hypothesis as one typed value: its text and the option it names, whatever the method.

Evidence, the mechanism table and the viewer read `text` and `option` without knowing which method formed it;
the method's own fields (HCQR's discriminating features, CHR's mimic and λ) ride along in `details`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


def normalise(text: str) -> str:
    """Lowercase, punctuation to spaces, padded so matches fall on word boundaries."""
    return " " + re.sub(r"[^a-z0-9]+", " ", text.lower()).strip() + " "


def option_named_in(text: str, options: dict[str, str]) -> str | None:
    """The one option whose text appears in `text` (None when none or several do: a statement, not a letter)."""
    found = normalise(text)
    named = [letter for letter, option in options.items() if normalise(option) in found]
    return named[0] if len(named) == 1 else None


def option_of_letter(letter: Any, options: dict[str, str]) -> str | None:
    """An option letter as a model wrote it (`B`, `b.`, `B) Beta cells`), or None when it names no option."""
    first = str(letter or "").strip().upper()[:1]
    return first if first in options else None


@dataclass(frozen=True)
class Hypothesis:
    text: str
    option: str | None = None  # the option letter it names, None when it names none
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The row's `hypothesis`: the method's own fields, plus `text` and `option` every reader may use."""
        return {**self.details, "text": self.text, "option": self.option}
