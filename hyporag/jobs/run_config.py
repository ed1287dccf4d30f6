"""The settings of one run, built once from the project file and the command line (or the API), never mutated.

Precedence: a flag given on the command line, then `hyporag.toml` (in the working directory, or `--config`): its
command's table (`[eval]`, `[fit]`, `[tune]`, `[compile]`, `[reproduce]`) over its top level; then the defaults
below. The top level holds shared keys: a run setting (`dataset`, `lm`, `threads`, ...) or a program setting of any
method (`budget`, `lam`, `per_query_k`, `domain`, ...); a table may also hold its job's own settings
(hyporag.jobs.settings); anything else is refused, naming the file and key.

A run setting lives in one group (hyporag.jobs.run_groups); the run's methods are typed configs, made once here from
their names and the shared program settings (or given typed from Python).
"""

from __future__ import annotations

import tomllib
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hyporag.foundation.errors import ConfigError
from hyporag.foundation.settings import check_value, origins, where
from hyporag.jobs.run_groups import (
    GROUP_OF,
    GROUPS,
    DataSettings,
    IndexSettings,
    LMSettings,
    RunControl,
    TrackingSettings,
)
from hyporag.programs.config import ProgramConfig
from hyporag.programs.protocol import protocol_of
from hyporag.programs.registry import configs, method_config, method_entry, program_field

PROJECT_FILE = "hyporag.toml"
DEFAULT_CORPUS = "medcorp-local"
DEFAULT_METHODS = "cot,rag"


@dataclass(frozen=True)
class MethodChoice:
    """One method of a run: its registered name and the typed config it runs with."""

    name: str
    config: ProgramConfig


def program_fields() -> set[str]:
    return {f.name for config in configs() for f in fields(config)}


def route(values: dict[str, Any], origin: str | dict[str, str], skip_unknown: bool = False
          ) -> tuple[dict, dict, Any]:
    """Split flat settings into ({group: changes}, program settings, methods); an unknown key is refused naming
    where it came from (or skipped: a command's own flag). Values are checked where they are used: by their group,
    or by the field of the method config that declares them (`check_program_value`)."""
    groups: dict[str, dict[str, Any]] = {}
    program: dict[str, Any] = {}
    methods = None
    for key, value in values.items():
        key = key.replace("-", "_")
        if key == "methods":
            methods = value
        elif key in GROUP_OF:
            groups.setdefault(GROUP_OF[key], {})[key] = value
        elif program_field(key) is not None:
            program[key] = value
        elif not skip_unknown:
            place = origin if isinstance(origin, str) else origin.get(key, "RunConfig")
            raise ConfigError(f"{place}: unknown setting {key!r} (run settings: {', '.join(sorted(RUN_FIELDS))}; "
                              f"program settings: {', '.join(sorted(program_fields()))})")
    return groups, program, methods


def check_program_value(key: str, value: Any, origin: str) -> Any:
    """A program setting checked once, by the field of the config that declares it (its type, choices and rule),
    naming where the value came from: a value no method of the run has is caught as early as one it has."""
    owner, spec = program_field(key)
    return check_value(spec, typing.get_type_hints(owner)[key], value, where(origin, key, spec.metadata.get("flag")))


def method_choices(methods: Any, program_settings: dict[str, Any]) -> tuple[MethodChoice, ...]:
    """The run's methods as typed configs: a name (or "a,b") gets its preset and the shared program settings it
    has; a `MethodChoice` or a `(name, config)` pair is kept as given."""
    items = methods.split(",") if isinstance(methods, str) else methods
    if not isinstance(items, Iterable):
        raise ConfigError(f"RunConfig.methods: must be method names or (name, config) pairs, got {methods!r}")
    out = []
    for item in items:
        if isinstance(item, str) and item.strip():
            name = item.strip()
            out.append(MethodChoice(name, method_config(name, program_settings, source="settings")))
        elif isinstance(item, (MethodChoice, tuple)) and len(pair := tuple(
                (item.name, item.config) if isinstance(item, MethodChoice) else item)) == 2:
            name, config = pair
            expected = method_entry(str(name)).program.Config
            if type(config) is not expected:  # another method's config would carry settings this one ignores
                raise ConfigError(f"RunConfig.methods: {name} takes a {expected.__qualname__}, got {config!r}")
            out.append(MethodChoice(str(name), config))
        elif not (isinstance(item, str) and not item.strip()):
            raise ConfigError(f"RunConfig.methods: {item!r} is neither a method name nor a (name, config) pair")
    return tuple(out)


@dataclass(frozen=True, init=False)
class RunConfig:
    """Everything a command shares, in its groups, and the run's methods as typed configs. `program_settings` are
    the shared program settings given (flags, file, Python): each method takes those it has.

    Build it from groups or from any setting by name, as a notebook user would:
    `RunConfig(dataset="mmlu-med-dev", limit=20, methods="cot,hcqr", budget=4)`."""

    data: DataSettings
    index: IndexSettings
    lms: LMSettings
    control: RunControl
    tracking: TrackingSettings
    methods: tuple[MethodChoice, ...]
    # the program settings the run was given (read-only; each checked once by the field that declares it): the one
    # input every method's typed config is made from, here and for a method a job adds (fit's candidates)
    program_settings: Mapping[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # setting -> where it came from (flag, file, default)

    def __init__(self, data: DataSettings | None = None, index: IndexSettings | None = None,
                 lms: LMSettings | None = None, control: RunControl | None = None,
                 tracking: TrackingSettings | None = None, methods: Any = DEFAULT_METHODS,
                 program_settings: dict[str, Any] | None = None, sources: dict[str, str] | None = None,
                 **settings: Any) -> None:
        given = {"data": data, "index": index, "lms": lms, "control": control, "tracking": tracking}
        for name, group in given.items():
            if group is not None and not isinstance(group, GROUPS[name]):
                raise ConfigError(f"RunConfig.{name}: must be a {GROUPS[name].__name__}, got {group!r}")
        sources = dict(sources or {})
        origin = {key.replace("-", "_"): sources.get(key.replace("-", "_"), "RunConfig") for key in settings}
        changes, program, flat_methods = route(settings, origin)
        if not isinstance(program_settings or {}, dict):
            raise ConfigError(f"RunConfig.program_settings: must be a table, got {program_settings!r}")
        program_settings = {k: v for k, v in (program_settings or {}).items() if k != "method"}  # (a manifest's)
        unknown = sorted(set(program_settings) - program_fields())
        if unknown:
            raise ConfigError(f"RunConfig.program_settings: no method has setting {', '.join(map(repr, unknown))}")
        program = {**program_settings, **program}
        places = {k: sources.get(k, origin.get(k, "RunConfig.program_settings")) for k in program}
        program = {k: check_program_value(k, v, places[k]) for k, v in program.items()}
        with origins({**places, **origin}):
            for name, cls in GROUPS.items():
                group = given[name] or cls()
                object.__setattr__(self, name, group.replace(**changes[name]) if name in changes else group)
            object.__setattr__(self, "program_settings", MappingProxyType(program))
            object.__setattr__(self, "sources", sources)
            object.__setattr__(self, "methods", method_choices(
                flat_methods if flat_methods is not None else methods, program))

    @property
    def method_names(self) -> list[str]:
        return [m.name for m in self.methods]

    def config_for(self, method: str) -> ProgramConfig:
        """The typed config `method` runs with: the run's own when it is one of the run's methods, else its preset
        and the shared program settings it has (a fit or tune of a method the run does not list)."""
        for choice in self.methods:
            if choice.name == method:
                return choice.config
        return method_config(method, self.program_settings, source="settings")

    def setting(self, name: str) -> Any:
        """A run setting by its name, from whichever group holds it."""
        if name not in GROUP_OF:
            raise ConfigError(f"RunConfig: unknown run setting {name!r}")
        return getattr(getattr(self, GROUP_OF[name]), name)

    @property
    def protocol(self):
        """The protocol the run's programs (a frozen --program's own, once `artifact_config` applied it) run under."""
        return protocol_of(self.program_settings)

    def replace(self, **changes: Any) -> RunConfig:
        """A copy with settings changed, by name or by group. New shared program settings remake the methods that
        were made from the old ones; a config given typed is kept."""
        groups = {name: changes.pop(name, getattr(self, name)) for name in GROUPS}
        routed, program, flat_methods = route({k: v for k, v in changes.items()
                                               if k not in ("program_settings", "sources")}, "RunConfig")
        for name, group_changes in routed.items():
            groups[name] = groups[name].replace(**group_changes)
        new_program = {**changes.get("program_settings", dict(self.program_settings)), **program}
        methods = flat_methods
        if methods is None:
            methods = tuple(m.name if m.config == method_config(m.name, self.program_settings, source="settings")
                            else m for m in self.methods) if new_program != self.program_settings else self.methods
        return RunConfig(**groups, methods=methods, program_settings=new_program,
                         sources={**changes.get("sources", self.sources)})


RUN_FIELDS = set(GROUP_OF) | {"methods"}


def read_project_file(path: Path | None) -> tuple[dict[str, Any], str | None]:
    """The project file's settings (empty when there is none); a bad file is one line naming it."""
    explicit = path is not None
    path = path or Path.cwd() / PROJECT_FILE
    if not path.is_file():
        if explicit:
            raise ConfigError(f"{path}: project file not found")
        return {}, None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    return data, str(path)


def build_run_config(flags: dict[str, Any], project: dict[str, Any] | None = None,
                     project_path: str | None = None, table: dict[str, Any] | None = None,
                     table_origin: str | None = None) -> RunConfig:
    """Merge defaults < project file (top level, then the command's table) < flags given on the command line into
    one RunConfig; a value of the wrong type, or a --limit below 1, is refused naming where it came from (`route`)."""
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    layers = ((project_path or PROJECT_FILE, project or {}), (table_origin or PROJECT_FILE, table or {}),
              ("command line", flags))
    for origin, values in layers:
        given = {k.replace("-", "_"): v for k, v in values.items() if v is not None}
        groups, program, methods = route(given, origin, skip_unknown=origin == "command line")
        known = {k: v for changes in groups.values() for k, v in changes.items()} | program
        if methods is not None:
            if not isinstance(methods, str):
                raise ConfigError(f"{where(origin, 'methods')}: must be a string, got {methods!r}")
            known["methods"] = methods
        merged.update(known)
        sources.update(dict.fromkeys(known, origin))
    return RunConfig(**merged, sources=sources)
