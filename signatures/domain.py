"""The domain is a setting, not a word baked into every instruction.

Instructions and field descriptions carry placeholders — {domain}, {corpus}, {source}, {clues} — filled from a
`Domain` when a program builds its predictors. The shipped medical benchmarks get today's medical wording;
any other domain gets neutral words ("reference text", "key clues") around its own name.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import dspy

MEDICAL = "medical"


@dataclass(frozen=True)
class Domain:
    """What the questions are about and what the retriever searches, as the instructions say it."""

    domain: str = MEDICAL
    corpus: str = "medical textbook index"
    source: str = "textbook"
    clues: str = "clinical clues"

    @classmethod
    def named(cls, domain: str = MEDICAL, corpus: str | None = None) -> Domain:
        if domain == MEDICAL:
            return cls(corpus=corpus or cls.corpus)
        return cls(domain, corpus or f"{domain} reference index", "reference text", "key clues")

    def fill(self, text: str) -> str:
        """Our four placeholders only (DSPy's own `${field}` descriptions pass through untouched)."""
        for name in ("domain", "corpus", "source", "clues"):
            text = text.replace("{" + name + "}", getattr(self, name))
        return text


@lru_cache(maxsize=256)
def for_domain(signature: type[dspy.Signature], domain: Domain) -> type[dspy.Signature]:
    """The signature with its instruction and every field description filled in for `domain`."""
    filled = signature.with_instructions(domain.fill(signature.instructions))
    for name, field in signature.fields.items():
        desc = (field.json_schema_extra or {}).get("desc")
        if desc and desc != domain.fill(desc):
            filled = filled.with_updated_fields(name, desc=domain.fill(desc))
    return filled
