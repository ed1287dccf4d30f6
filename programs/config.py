"""One typed config per method: fields with defaults, validation, a dict round trip, its Optuna search space and
its command-line flags, all read from the one dataclass. A program's `settings()`, the artifact manifest, `tune`
and the CLI all go through it, so adding a method is its program file and its config.

A field's `metadata` names its flag (`flag("--per-query-k", "help")`); `suggest` is the search space.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from hyporag.foundation.errors import ConfigError
from hyporag.programs.protocol import PROTOCOLS, Protocol, protocol_named
from hyporag.retrieval.retriever import MODES


def flag(name: str, help: str, choices: tuple | None = None, default: Any = None, **extra: Any) -> Any:
    """A config field that the CLI exposes as `name` (its argparse default stays None: "not given")."""
    return field(default=default, metadata={"flag": name, "help": help, "choices": choices, **extra})


def _base_type(hint: Any) -> type:
    """int for `int` and `int | None`, str for `str | None`, ..."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    return typing.get_origin(hint) or hint


@dataclass(frozen=True)
class ProgramConfig:
    """Settings every program has. Subclasses add their method's own."""

    method: ClassVar[str] = "base"
    protocol_rules: ClassVar[dict[str, Any]] = {}  # the method's own rules under each protocol (none here)

    budget: int = flag("--budget", "final context size B in passages (paper: 15)", default=15)
    retrieval_sees_options: bool | None = None  # None: the method's own rule; --options-visible / --question-only
    reasoning: bool = flag("--reasoning", "answer with step-by-step reasoning first", default=False)
    mode: str | None = None  # retriever mode for this program (None: the index's); tuned by `tune`
    protocol: str = flag("--protocol", "fast = short steps for CPU models (default); paper = the authors' protocol "
                         "(hypothesis by elimination, reasoning answer step, documents first)",
                         choices=tuple(PROTOCOLS), default="fast")
    parse: str = flag("--parse", "how an unparseable answer is scored: strict = wrong (default), mirage = "
                      "MIRAGE's rule, option A; either way it is counted", choices=("strict", "mirage"),
                      default="strict")
    domain: str = flag("--domain", "what the questions are about, filled into every instruction (default "
                       "medical: the shipped benchmarks' wording)", default="medical")
    corpus_description: str | None = flag("--corpus-description", "what the retriever searches, as the query "
                                          "instructions say it (default: from --domain)")

    def __post_init__(self) -> None:
        self._check_types()
        if not isinstance(self.budget, int) or self.budget < 1:
            raise ConfigError(f"{self.method}: budget must be a whole number of passages >= 1, got {self.budget!r}")
        if self.protocol not in PROTOCOLS:
            raise ConfigError(f"{self.method}: unknown protocol {self.protocol!r}: use {' or '.join(PROTOCOLS)}")
        _ = self.own_rules if type(self).protocol_rules else None  # a method without rules for it: refused here
        if self.rules.answer_reasons and not self.reasoning:  # resolved once: the protocol's answer step reasons
            object.__setattr__(self, "reasoning", True)
        if self.parse not in ("strict", "mirage"):
            raise ConfigError(f"{self.method}: unknown parse rule {self.parse!r}: use strict or mirage")
        if self.mode is not None and self.mode not in MODES:
            raise ConfigError(f"{self.method}: unknown retrieval mode {self.mode!r}: use one of {', '.join(MODES)}")

    def _check_types(self) -> None:
        """Every field holds its declared type (an int may stand for a float), refused in one line naming it: from
        Python, a project file or a preset alike."""
        for name, hint in typing.get_type_hints(type(self)).items():
            if name not in self.__dataclass_fields__:
                continue
            value = getattr(self, name)
            optional = isinstance(hint, types.UnionType) and type(None) in typing.get_args(hint)
            if value is None and optional:
                continue
            kind = _base_type(hint)
            ok = (isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float
                  else isinstance(value, int) and not isinstance(value, bool) if kind is int
                  else isinstance(value, kind) if isinstance(kind, type) else True)
            if not ok:
                raise ConfigError(f"{self.method}: {name} must be {getattr(kind, '__name__', kind)}, got {value!r}")

    @property
    def rules(self) -> Protocol:
        """The protocol object every protocol-dependent step reads (never the name)."""
        return protocol_named(self.protocol)

    @property
    def own_rules(self) -> Any:
        """This method's own rules under the run's protocol (HCQR's query budget, CHR's voice), declared beside it."""
        rules = type(self).protocol_rules
        if self.protocol not in rules:
            raise ConfigError(f"{self.method}: no rules declared for protocol {self.protocol!r}")
        return rules[self.protocol]

    # -- dict round trip ----------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "settings") -> ProgramConfig:
        """Refuses a key this method does not have, naming it and where it came from."""
        data = cls.normalize(dict(data))
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known) - {"method"})
        if unknown:
            raise ConfigError(f"{source}: {cls.method} has no setting {', '.join(map(repr, unknown))} "
                              f"(it has {', '.join(known)})")
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known}
        try:
            return cls(**values)
        except TypeError as exc:
            raise ConfigError(f"{source}: {exc}") from None

    @classmethod
    def normalize(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Turn an API convenience form of a setting into its fields (a method's hook; identity here)."""
        return data

    def replace(self, **changes: Any) -> ProgramConfig:
        """A copy with some fields changed; changes to fields this method lacks are ignored (a shared CLI flag)."""
        own = {f.name for f in fields(self)}
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if k in own})

    # -- Optuna -------------------------------------------------------------------------------------------------
    def suggest(self, trial, modes: list[str]) -> ProgramConfig:
        """This config with the trial's choices: the retriever mode here; methods add their own knobs."""
        return self.replace(mode=trial.suggest_categorical("mode", modes))

    def trial_params(self, default_mode: str, modes: list[str]) -> dict[str, Any]:
        """This config as Optuna parameters (trial 0 measures the untuned program)."""
        mode = self.mode or default_mode
        return {"mode": mode if mode in modes else modes[0]}

    # -- CLI ----------------------------------------------------------------------------------------------------
    @classmethod
    def cli_flags(cls) -> dict[str, dict[str, Any]]:
        """flag -> argparse keyword arguments, for every field that has a flag."""
        out = {}
        hints = typing.get_type_hints(cls)
        for f in fields(cls):
            meta = f.metadata
            if "flag" not in meta:
                continue
            kind = _base_type(hints[f.name])
            spec: dict[str, Any] = {"dest": f.name, "help": meta["help"], "default": None}
            if kind is bool:
                spec["action"] = "store_const"
                spec["const"] = True
            else:
                spec["type"] = kind if kind in (int, float) else str
                if meta.get("choices"):
                    spec["choices"] = meta["choices"]
            out[meta["flag"]] = spec
        return out
