"""The protocol a program runs under, as one object resolved once from its settings (a frozen artifact's included).

Two protocols exist. `fast` runs short steps sized for CPU models: no reasoning before the answer, passages last
so a question's calls share llama.cpp's cached prefix, the lean adapter and a capped output grammar on the
embedded engine. `paper` runs the authors' protocol: HCQR's hypothesis by elimination and queries written from it,
budget // 3 passages per query merged by summed scores, CHR's specialist call, MedRAG's answer step (documents
first, reasoning before the choice), DSPy's JSON adapter and no output cap (long reasoning is not cut, as on a
server). Every place that differs by protocol reads one of these fields; none compares the name.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from hyporag.foundation.errors import ConfigError


@dataclass(frozen=True)
class Protocol:
    name: str
    answer_reasons: bool  # the answer step reasons step by step before the letter
    documents_first: bool  # the answer prompt puts documents before the question (MedRAG's order)
    hypothesis_by_elimination: bool  # HCQR's hypothesis and queries in the authors' wording
    queries_share_budget: bool  # HCQR retrieves budget // queries per query (else the budget per query)
    hcqr_merge: str  # how HCQR's lists become one context when no merge policy is given
    specialist_hypotheses: bool  # CHR's one call in a specialist's voice
    local_adapter: str  # the adapter `auto` picks for an in-process GGUF model
    caps_engine_output: bool  # the embedded engine's grammar caps strings and lists (part of its cache key)

    def record(self) -> dict:
        """What run.json and the artifact manifest store of it: every rule, not only the name."""
        return asdict(self)


FAST = Protocol("fast", answer_reasons=False, documents_first=False, hypothesis_by_elimination=False,
                queries_share_budget=False, hcqr_merge="round_robin", specialist_hypotheses=False,
                local_adapter="lean", caps_engine_output=True)
PAPER = Protocol("paper", answer_reasons=True, documents_first=True, hypothesis_by_elimination=True,
                 queries_share_budget=True, hcqr_merge="sum", specialist_hypotheses=True, local_adapter="json",
                 caps_engine_output=False)
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
