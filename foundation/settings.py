"""One way to declare a setting. A settings class is a frozen dataclass deriving from `Settings`; each field says,
once, its type (the annotation), its default, the values it allows (`choices`), its own rule (`rule`), and the flag
and help the command line shows (`setting(..., flag="--budget", help=...)`). One checker reads them all: a value of
the wrong type, outside its choices or against its rule is refused in one line naming the field and where the value
came from (`--budget`, `hyporag.toml: budget`, `RunControl.threads`). The command line's flags are generated from
the same fields (`cli_arguments`), so no flag, help text or choice list is written twice.

A method's config (hyporag.programs.config), the run's groups (hyporag.jobs.run_groups) and every job's settings
(hyporag.jobs.settings) are `Settings`.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import os
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar

from hyporag.foundation.errors import ConfigError

TYPE_NAMES = {int: "a whole number", float: "a finite number", str: "a string", bool: "true or false", list: "a list",
              tuple: "a list", dict: "a table"}
Rule = Callable[[Any], "str | None"]  # a value's own rule: the reason it is refused, or None
_ORIGINS: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("hyporag_origins", default=None)


def setting(default: Any = MISSING, *, flag: str | None = None, help: str | None = None,
            choices: tuple | None = None, rule: Rule | None = None, default_factory: Any = MISSING,
            **cli: Any) -> Any:
    """A field of a `Settings` class. `flag` exposes it on the command line (with `help`); `cli` holds argparse
    extras for that flag (`metavar`, `action="append"`, `consts={"--question-only": False}` for several flags that
    set one field, `parse` for a flag's text)."""
    metadata = {"flag": flag, "help": help, "choices": choices, "rule": rule, "cli": cli}
    if default_factory is not MISSING:
        return field(default_factory=default_factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def declared_default(name: str) -> Any:
    """The default of a setting named `name` in any Settings class loaded now (dataclasses.MISSING: none declares
    one): what a run recorded before the setting existed ran with."""
    stack = list(Settings.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        for spec in dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ():
            if spec.name == name and spec.default is not dataclasses.MISSING:
                return spec.default
    return dataclasses.MISSING


def at_least(low: float) -> Rule:
    return lambda v: None if v is None or v >= low else f"must be {low:g} or more, got {v!r}"


def above(low: float) -> Rule:
    return lambda v: None if v is None or v > low else f"must be above {low:g}, got {v!r}"


def between(low: float, high: float) -> Rule:
    return lambda v: None if v is None or low <= v <= high else f"must be between {low:g} and {high:g}, got {v!r}"


def base_type(hint: Any) -> Any:
    """int for `int` and `int | None`, tuple for `tuple[str, ...]`, ..."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    return typing.get_origin(hint) or hint


def optional(hint: Any) -> bool:
    return (isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union) and \
        type(None) in typing.get_args(hint)


def where(origin: str, key: str, flag: str | None = None) -> str:
    """Where a value came from, as a user would look for it: `--budget` (the field's own flag when it declares one:
    `answer_mode` is `--answer`), `hyporag.toml: budget`, `RunConfig.x`."""
    if origin == "command line":
        return flag or f"--{key.replace('_', '-')}"
    if origin.isidentifier():  # a class or the name of a job
        return f"{origin}.{key}"
    return f"{origin}: {key}"


def fits(value: Any, kind: Any) -> bool:
    """Whether `value` has the base type `kind` (an int may stand for a float, a list for a tuple)."""
    if kind is float:  # inf and NaN are no setting's value (a temperature of inf, a budget of NaN minutes)
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind in (list, tuple):
        return isinstance(value, (list, tuple))
    return isinstance(value, kind) if isinstance(kind, type) else True


def normalized(value: Any, kind: Any) -> Any:
    """A path where a string is declared is its string; a list where a tuple is declared is the tuple (and back)."""
    if kind is str and isinstance(value, os.PathLike):
        return os.fspath(value)
    if kind is tuple and isinstance(value, list):
        return tuple(value)
    if kind is list and isinstance(value, tuple):
        return list(value)
    return value


def check_value(spec: dataclasses.Field, hint: Any, value: Any, place: str) -> Any:
    """The value, normalized, or a one-line ConfigError naming `place` (the field and where its value came from)."""
    kind = base_type(hint)
    value = normalized(value, kind)
    if value is None and (optional(hint) or spec.default is None):
        return value
    if kind in TYPE_NAMES and not fits(value, kind):
        raise ConfigError(f"{place}: must be {TYPE_NAMES[kind]}, got {value!r}")
    choices = spec.metadata.get("choices")
    if choices and value not in choices:
        raise ConfigError(f"{place}: must be one of {', '.join(map(str, choices))}, got {value!r}")
    rule = spec.metadata.get("rule")
    problem = rule(value) if rule else None
    if problem:
        raise ConfigError(f"{place}: {problem}")
    return value


@contextlib.contextmanager
def origins(values: Mapping[str, str]) -> Iterator[None]:
    """While settings are built inside, errors name each field's origin from `values` (field -> origin)."""
    token = _ORIGINS.set(values)
    try:
        yield
    finally:
        _ORIGINS.reset(token)


@dataclass(frozen=True)
class Settings:
    """Base of every settings class: each field checked on creation by `check_value`, then the class's own
    cross-field rules (`check`)."""

    OWNER: ClassVar[str] = ""  # how an error names a value given from Python (default: the class name)

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for spec in fields(self):
            value = check_value(spec, hints[spec.name], getattr(self, spec.name), self.place(spec.name))
            object.__setattr__(self, spec.name, value)
        self.check()

    @classmethod
    def owner(cls) -> str:
        return cls.OWNER or cls.__name__

    def place(self, name: str) -> str:
        """A field as an error names it: where its value came from (a flag, a file's key, the class)."""
        spec = next((f for f in fields(self) if f.name == name), None)
        return where((_ORIGINS.get() or {}).get(name, self.owner()), name, spec.metadata.get("flag") if spec else None)

    def refuse(self, name: str, message: str) -> None:
        raise ConfigError(f"{self.place(name)}: {message}")

    def check(self) -> None:
        """The class's own rules across fields (a field's type, choices and rule are checked already)."""

    @classmethod
    def field_names(cls) -> set[str]:
        return {f.name for f in fields(cls)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str | None = None, base: Settings | None = None):
        """`base` (or the defaults) with `data` on top; a key the class lacks is refused naming `source`."""
        source = source or cls.owner()
        values = {f.name: getattr(base, f.name) for f in fields(cls)} if base is not None else {}
        known = cls.field_names()
        given = {}
        for key, value in data.items():
            key = key.replace("-", "_")
            if key not in known:
                raise ConfigError(f"{source}: {cls.owner()} has no setting {key!r} (it has {', '.join(sorted(known))})")
            given[key] = value
        with origins({**(_ORIGINS.get() or {}), **dict.fromkeys(given, source)}):
            try:
                return cls(**{**values, **given})
            except TypeError as exc:
                raise ConfigError(f"{source}: {cls.owner()}: {exc}") from None

    def replace(self, **changes: Any):
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v for f in fields(self)}

    @classmethod
    def cli_arguments(cls) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
        """(flags, argparse keyword arguments) for every field that declares a flag; defaults stay None ("not
        given"), so a project file's value is not overridden by a flag nobody typed."""
        out = []
        hints = typing.get_type_hints(cls)
        for spec in fields(cls):
            meta = spec.metadata
            if not meta.get("flag"):
                continue
            extra = dict(meta.get("cli") or {})
            consts = extra.pop("consts", None)
            extra.pop("parse", None)
            if consts:  # several flags setting one field to fixed values (--options-visible / --question-only)
                for flag, const in consts.items():
                    out.append(((flag,), {"dest": spec.name, "action": "store_const", "const": const,
                                          "help": extra.get("helps", {}).get(flag, meta["help"])}))
                continue
            kind = base_type(hints[spec.name])
            arguments: dict[str, Any] = {"dest": spec.name, "help": meta["help"], "default": None}
            if kind is bool:
                arguments.update(action="store_const", const=True)
            else:
                if extra.get("action") != "append" and kind in (int, float):
                    arguments["type"] = kind
                if meta.get("choices"):
                    arguments["choices"] = meta["choices"]
            arguments.update({k: v for k, v in extra.items() if k != "helps"})
            out.append(((meta["flag"],), arguments))
        return out

    @classmethod
    def flag_parsers(cls) -> dict[str, Callable[[Any], Any]]:
        """Fields whose flag text needs parsing into the field's type (`--splits 0.5,0.25,0.25`)."""
        return {f.name: f.metadata["cli"]["parse"] for f in fields(cls) if (f.metadata.get("cli") or {}).get("parse")}
