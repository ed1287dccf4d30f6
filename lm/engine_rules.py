"""What a protocol asks of the embedded engine: which adapter `auto` picks for an in-process GGUF model and whether
its output grammar caps strings and lists. The LM layer's own rules, keyed by protocol name, so the protocol object
(programs/protocol.py) holds only the rules of the programs' steps."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from hyporag.foundation.errors import ConfigError


@dataclass(frozen=True)
class EngineRules:
    local_adapter: str  # the adapter `auto` picks for an in-process GGUF model
    caps_engine_output: bool  # the embedded engine's grammar caps strings and lists (part of its cache key)

    def record(self) -> dict:
        return asdict(self)


# fast: the lean adapter and a capped grammar (short steps for CPU models); paper: DSPy's JSON adapter, no cap
# (long reasoning is not cut, as on a server)
ENGINE_RULES: dict[str, EngineRules] = {"fast": EngineRules("lean", True), "paper": EngineRules("json", False)}


def engine_rules(protocol: str | None) -> EngineRules:
    try:
        return ENGINE_RULES[protocol or "fast"]
    except KeyError:
        raise ConfigError(f"the LM layer has no rules for protocol {protocol!r} (it knows "
                          f"{', '.join(ENGINE_RULES)})") from None


def engine_kwargs(protocol: str | None) -> dict:
    """The protocol's rules as `LMRoles.from_specs` keywords."""
    rules = engine_rules(protocol)
    return {"local_adapter": rules.local_adapter, "cap_outputs": rules.caps_engine_output}
