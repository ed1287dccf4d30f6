"""One typed config per method: a `Settings` (hyporag.foundation.settings) whose fields give validation, the dict
round trip and the command-line flags, and whose `suggest` gives its Optuna search space. A program's `settings()`,
the artifact manifest, `tune` and the CLI all go through it, so adding a method is its program file and its config.

A field names its flag once (`flag("--per-query-k", "help")`); `suggest` is the search space.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from hyporag.foundation.errors import ConfigError
from hyporag.foundation.settings import Settings, above, between, setting
from hyporag.programs.answer_modes import ANSWER_MODES, answer_mode_for
from hyporag.programs.answer_step import PARSE_RULES
from hyporag.programs.hypothesis import HYPOTHESIS_SOURCES
from hyporag.programs.mixture import MIX_RULES
from hyporag.programs.protocol import PROTOCOLS, Protocol, protocol_named
from hyporag.retrieval.retriever import MODES


def flag(name: str, help: str, choices: tuple | None = None, default: Any = None, rule: Any = None,
         **extra: Any) -> Any:
    """A config field that the CLI exposes as `name` (its argparse default stays None: "not given")."""
    return setting(default, flag=name, help=help, choices=choices, rule=rule, **extra)


def hypothesis_from_flag() -> Any:
    """The `hypothesis_from` setting HCQR and CHR share (one flag on the command line)."""
    return flag("--hypothesis-from", "HCQR/CHR: where retrieval's hypothesis comes from: generated (the papers': an "
                "LM call forms it; default) or reader (the options the reader's closed-book answer is torn between, "
                "each given the same retrieval)", choices=HYPOTHESIS_SOURCES, default="generated")


def _budget(value: Any) -> str | None:
    return None if value >= 1 else f"budget must be a whole number of passages >= 1, got {value!r}"


def _protocol(value: Any) -> str | None:
    return None if value in PROTOCOLS else f"unknown protocol {value!r}: use {' or '.join(PROTOCOLS)}"


@dataclass(frozen=True)
class ProgramConfig(Settings):
    """Settings every program has. Subclasses add their method's own."""

    method: ClassVar[str] = "base"
    protocol_rules: ClassVar[dict[str, Any]] = {}  # the method's own rules under each protocol (none here)

    budget: int = flag("--budget", "final context size B in passages (paper: 15)", default=15, rule=_budget)
    retrieval_sees_options: bool | None = flag(
        "--options-visible", "let retrieval see the options (default: per method; HCQR/CHR do, baselines do not)",
        consts={"--options-visible": True, "--question-only": False},
        helps={"--question-only": "MIRAGE's rule: retrieval sees the question only"})
    reasoning: bool = flag("--reasoning", "answer with step-by-step reasoning first", default=False)
    mode: str | None = setting(None, choices=MODES)  # retriever mode for this program (None: the index's); tuned
    protocol: str = flag("--protocol", "fast = short steps for CPU models (default); paper = the authors' protocol "
                         "(hypothesis by elimination, reasoning answer step, documents first)", default="fast",
                         rule=_protocol)
    parse: str = flag("--parse", "how an unparseable answer is scored: strict = wrong (default), mirage = "
                      "MIRAGE's rule, option A; either way it is counted", choices=PARSE_RULES, default="strict")
    domain: str = flag("--domain", "what the questions are about, filled into every instruction (default "
                       "medical: the shipped benchmarks' wording)", default="medical")
    corpus_description: str | None = flag("--corpus-description", "what the retriever searches, as the query "
                                          "instructions say it (default: from --domain)")
    answer_mode: str = flag("--answer", "joint = one answer call with every passage (default); per-passage = one "
                            "call per passage and the closed-book answer, mixed into one distribution",
                            rule=lambda v: None if v in ANSWER_MODES else f"must be one of {', '.join(ANSWER_MODES)}, "
                            f"got {v!r}", default="joint")
    mix: str = flag("--mix", "per-passage: linear mixture of the readings (default) or loglinear (a product of "
                    "experts); tuned", choices=MIX_RULES, default="linear")
    mix_temperature: float = flag("--mix-temperature", "per-passage: temperature of the softmax over passage ranks "
                                  "(large: every passage alike; default 1); tuned", default=1.0, rule=above(0))
    prior_weight: float = flag("--prior-weight", "per-passage: the closed-book answer's weight in the mixture "
                               "(default 0.2); tuned", default=0.2, rule=between(0, 1))
    retrieve_below: float | None = flag("--retrieve-below", "answer closed-book first and retrieve only when the "
                                        "reader's top option probability is below P (needs option probabilities); "
                                        "tuned when given", rule=between(0, 1))

    @classmethod
    def owner(cls) -> str:
        return cls.method

    def check(self) -> None:
        _ = self.own_rules if type(self).protocol_rules else None  # a method without rules for it: refused here
        if self.rules.answer_reasons and not self.reasoning:  # resolved once: the protocol's answer step reasons
            object.__setattr__(self, "reasoning", True)

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
    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "settings", base: Any = None) -> ProgramConfig:
        """Refuses a key this method does not have, naming it and where it came from."""
        data = cls.normalize({k: v for k, v in dict(data).items() if k != "method"})
        return super().from_dict(data, source, base)

    @classmethod
    def normalize(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Turn an API convenience form of a setting into its fields (a method's hook; identity here)."""
        return data

    def replace(self, **changes: Any) -> ProgramConfig:
        """A copy with some fields changed; a field this method lacks is refused, naming it (a shared CLI flag is
        filtered before it gets here: hyporag.programs.registry.method_config)."""
        own = {f.name for f in fields(self)}
        strange = sorted(set(changes) - own)
        if strange:
            raise ConfigError(f"{type(self).__name__}.replace: {self.method} has no setting "
                              f"{', '.join(map(repr, strange))} (it has {', '.join(sorted(own))})")
        return dataclasses.replace(self, **changes)

    # -- Optuna -------------------------------------------------------------------------------------------------
    def suggest(self, trial, modes: list[str]) -> ProgramConfig:
        """This config with the trial's choices: the retriever mode, how the reader reads (the answer mode, and
        whether it answers closed-book first below a threshold P) and that mode's own numbers (the mixture when the
        answer is per passage); methods add their own knobs."""
        config = self.replace(mode=trial.suggest_categorical("mode", modes),
                              answer_mode=trial.suggest_categorical("answer_mode", list(ANSWER_MODES)))
        on_demand = trial.suggest_categorical("on_demand", [False, True])
        config = config.replace(retrieve_below=trial.suggest_float("retrieve_below", 0.3, 0.99) if on_demand else None)
        return answer_mode_for(config).suggest(config, trial)

    def trial_params(self, default_mode: str, modes: list[str]) -> dict[str, Any]:
        """This config as Optuna parameters (trial 0 measures the untuned program)."""
        mode = self.mode or default_mode
        return {"mode": mode if mode in modes else modes[0], "answer_mode": self.answer_mode,
                "on_demand": self.retrieve_below is not None,
                **({"retrieve_below": self.retrieve_below} if self.retrieve_below is not None else {}),
                **answer_mode_for(self).trial_params(self)}
