"""A program's working hypothesis as one typed value: its text and the option it names, whatever the method.

Evidence, the mechanism table and the viewer read `text` and `option` without knowing which method formed it;
the method's own fields (HCQR's discriminating features, CHR's mimic and λ) ride along in `details`.
"""

from __future__ import annotations

import math
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


HYPOTHESIS_SOURCES = ("generated", "reader")
COVER = 0.8  # the reader's doubt: the fewest options holding this much of its probability (at least two)
MOST_TORN = 3


def torn_between(distribution: dict[str, float] | None, cover: float = COVER, most: int = MOST_TORN
                 ) -> list[tuple[str, float]] | None:
    """The options carrying the reader's doubt, most probable first, with their probabilities: the fewest holding
    `cover` of its probability, at least two and at most `most`. None without a distribution."""
    if not distribution or len(distribution) < 2:
        return None
    ranked = sorted(((o, math.exp(v)) for o, v in distribution.items()), key=lambda x: (-x[1], x[0]))
    chosen, held = [], 0.0
    for option, p in ranked:
        if len(chosen) >= 2 and (held >= cover or len(chosen) >= most):
            break
        chosen.append((option, round(p, 6)))
        held += p
    return chosen


def doubt_hypothesis(torn: list[tuple[str, float]], options: dict[str, str], **details: Any) -> Hypothesis:
    """The reader's doubt as the row's hypothesis: it names no one option (retrieval is the same for each); the
    options it was drawn from and their probabilities ride along."""
    text = "torn between " + ", ".join(f"{o}. {options[o]} ({p:.2f})" for o, p in torn)
    return Hypothesis(text, None, {"drawn_from": "reader", "torn": [o for o, _ in torn],
                                   "probabilities": dict(torn), **details})


def torn_lines(torn: list[tuple[str, float]], options: dict[str, str]) -> str:
    """The torn options as the hypothesis step sees them: in the options' own order, without probabilities (which
    one the reader leans to must not steer the queries)."""
    return "\n".join(f"{o}. {options[o]}" for o in sorted(o for o, _ in torn))
