"""The protocol a program runs under, as one object resolved once from its settings (a frozen artifact's included).

Two protocols exist. `fast` runs short steps sized for CPU models: no reasoning before the answer, passages last
so a question's calls share llama.cpp's cached prefix. `paper` runs the authors' protocol: MedRAG's answer step
(documents first, reasoning before the choice). This object holds the rules every program's shared steps read;
a method's own rules under a protocol sit beside the method (`protocol_rules` on its config: HCQR's hypothesis by
elimination and query budget, CHR's specialist call) and the LM layer's beside it (lm/engine_rules.py: adapter,
output cap). None of them compares the name.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from hyporag.foundation.errors import ConfigError


@dataclass(frozen=True)
class Protocol:
    name: str
    answer_reasons: bool  # the answer step reasons step by step before the letter
    documents_first: bool  # the answer prompt puts documents before the question (MedRAG's order)

    def record(self) -> dict:
        """What run.json and the artifact manifest store of it: every rule, not only the name."""
        return asdict(self)


FAST = Protocol("fast", answer_reasons=False, documents_first=False)
PAPER = Protocol("paper", answer_reasons=True, documents_first=True)
PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (FAST, PAPER)}


def protocol_named(name: str | Protocol | None) -> Protocol:
    """The protocol of that name (None: fast); an unknown name is one clear error."""
    if isinstance(name, Protocol):
        return name
    try:
        return PROTOCOLS[name or FAST.name]
    except KeyError:
        raise ConfigError(f"unknown protocol {name!r}: use {' or '.join(PROTOCOLS)}") from None


def protocol_of(settings: dict) -> Protocol:
    """The protocol a program's settings (a manifest's `program_settings`, a run's) name."""
    return protocol_named(settings.get("protocol"))
