"""Method names as the CLI and the evaluation harness spell them: a program class and its config preset.

Ablations are presets of a method's config, not copies of its code; a method is registered here once.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from dataclasses import dataclass, field
from typing import Any

from hyporag.foundation.errors import ConfigError
from hyporag.programs.base import MCQProgram
from hyporag.programs.baselines import CoT, HyDE, Query2DocRAG, RerankRAG, Rewriting, SimpleRAG
from hyporag.programs.chr import CHR
from hyporag.programs.config import ProgramConfig
from hyporag.programs.hcqr import HCQR
from hyporag.programs.multi_query import MultiQueryRewriting


@dataclass(frozen=True)
class Method:
    """A program class, or "module:Class" under hyporag.programs (a method in its own file is one line here)."""

    program: type[MCQProgram] | str
    preset: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.program, str):
            module, _, name = self.program.partition(":")
            cls = getattr(importlib.import_module(f"hyporag.programs.{module}"), name)
            object.__setattr__(self, "program", cls)


METHODS: dict[str, Method] = {
    "cot": Method(CoT),
    "rag": Method(SimpleRAG),
    "rerank": Method(RerankRAG),
    "rewrite": Method(MultiQueryRewriting),
    "rewrite+options": Method(MultiQueryRewriting, {"retrieval_sees_options": True}),
    "rewrite-single": Method(Rewriting),
    "rewrite-single+options": Method(Rewriting, {"retrieval_sees_options": True}),
    "hyde": Method(HyDE),
    "q2d": Method(Query2DocRAG),
    "hcqr": Method(HCQR),
    "hcqr-no-support": Method(HCQR, {"queries": ("distinction", "key_features")}),
    "hcqr-no-distinction": Method(HCQR, {"queries": ("support", "key_features")}),
    "hcqr-no-key-features": Method(HCQR, {"queries": ("support", "distinction")}),
    "hcqr-no-options": Method(HCQR, {"retrieval_sees_options": False}),
    "hcqr-show-hypothesis": Method(HCQR, {"show_hypothesis": True}),
    "chr": Method(CHR),
    "chr-linear": Method(CHR, {"schedule": "linear"}),
    "chr-threshold": Method(CHR, {"schedule": "threshold"}),
    "chr-sigmoid": Method(CHR, {"schedule": "sigmoid"}),
    "option-contrast": Method("option_contrast:OptionContrast"),
}
PAPER_METHODS = ("cot", "rag", "rerank", "rewrite", "hyde", "q2d", "hcqr", "chr")
ENTRY_POINTS = "hyporag.methods"  # an installed package's methods: `name = "package.module:ProgramClass"`


def register_method(name: str, program: type[MCQProgram], preset: dict[str, Any] | None = None,
                    replace: bool = False) -> None:
    """Add a method of your own: an `MCQProgram` subclass (it implements `retrieve`; its `Config` declares its
    settings and their flags) under `name`, with an optional preset of its config. It then runs wherever a method
    name is taken: `evaluate`, `fit`, `tune`, `compile`, `view` (docs/adding-a-method.md)."""
    if not (isinstance(program, type) and issubclass(program, MCQProgram)):
        raise ConfigError(f"method {name!r}: {program!r} is not a subclass of hyporag.programs.MCQProgram")
    if not name or any(c in name for c in ", \t\n"):
        raise ConfigError(f"method name {name!r}: one word without commas or spaces")
    if name in METHODS and not replace:
        raise ConfigError(f"method {name!r} is registered already ({METHODS[name].program.__qualname__}); pass "
                          "replace=True to replace it")
    entry = Method(program, dict(preset or {}))
    program.Config.from_dict(entry.preset, source=f"method {name!r}: preset")  # a bad preset fails here, not later
    METHODS[name] = entry


def _load_entry_points() -> None:
    """Methods other installed packages declare under the `hyporag.methods` entry-point group."""
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINTS):
        if point.name in METHODS:
            continue
        try:
            register_method(point.name, point.load())
        except Exception as exc:  # noqa: BLE001 (one broken plug-in must not take every command down)
            print(f"hyporag: method {point.name!r} from {point.value} not loaded: {exc}", file=sys.stderr)


def configs() -> tuple[type[ProgramConfig], ...]:
    """Every registered method's config class, asked each time: a method registered from Python counts at once."""
    return tuple(dict.fromkeys(m.program.Config for m in METHODS.values()))


def program_field(name: str) -> tuple[type[ProgramConfig], dataclasses.Field] | None:
    """The config class that first declares a program setting `name`, and its field (None: no method has it)."""
    for config in configs():
        for spec in dataclasses.fields(config):
            if spec.name == name:
                return config, spec
    return None


def method_entry(method: str) -> Method:
    if method not in METHODS:
        raise ConfigError(f"unknown method {method!r}: use one of {', '.join(METHODS)}")
    return METHODS[method]


def method_config(method: str, overrides: dict[str, Any] | None = None, source: str = "settings",
                  strict: bool = False) -> ProgramConfig:
    """The method's config: its defaults, its preset, then `overrides` for the fields it has (shared CLI flags
    such as --lam do not apply to rag); a key no method has is refused, and with `strict` (a saved program's own
    settings) so is any key this method lacks."""
    entry = method_entry(method)
    overrides = entry.program.Config.normalize(dict(overrides or {}))
    if strict:
        return entry.program.Config.from_dict({**entry.preset, **overrides}, source)
    everyone = {f for config in configs() for f in config.__dataclass_fields__}
    strange = sorted(set(overrides) - everyone - {"method"})
    if strange:
        raise ConfigError(f"{source}: no method has setting {', '.join(map(repr, strange))}")
    own = entry.program.Config.__dataclass_fields__
    given = {k: v for k, v in overrides.items() if k in own}
    return entry.program.Config.from_dict({**entry.preset, **given}, source)


def make_program(method: str, retriever=None, roles=None, config: ProgramConfig | None = None,
                 **settings: Any) -> MCQProgram:
    """A program by name: `config` as given, or the method's preset with `settings` on top."""
    config = config if config is not None else method_config(method, settings, source=f"make_program({method!r})")
    program = method_entry(method).program(retriever=retriever, roles=roles, config=config)
    program.method = method
    return program


_load_entry_points()
