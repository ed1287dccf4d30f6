"""The settings of one run, built once from the project file and the command line (or the API), never mutated.

Precedence: a flag given on the command line, then `hyporag.toml` (in the working directory, or `--config`): its
command's table (`[eval]`, `[fit]`, `[tune]`, `[compile]`, `[reproduce]`) over its top level; then the defaults
below. The top level holds shared keys: a run setting (`dataset`, `lm`, `threads`, ...) or a program setting of any
method (`budget`, `lam`, `per_query_k`, `domain`, ...); a table may also hold its job's own settings
(hyporag.jobs.settings); anything else is refused, naming the file and key.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from hyporag.foundation.errors import ConfigError
from hyporag.programs.config import _base_type
from hyporag.programs.protocol import protocol_of
from hyporag.programs.registry import CONFIGS

PROJECT_FILE = "hyporag.toml"
DEFAULT_CORPUS = "medcorp-local"


@dataclass(frozen=True)
class RunConfig:
    """Everything a command shares: data, index, LMs and how the run executes. Program settings ride along in
    `program_settings` and go to each method's own config (`programs.registry.method_config`)."""

    data_dir: str | None = None
    dataset: str | None = None
    corpus: str | None = None
    index_dir: str | None = None
    retriever: str | None = None
    faiss: str = "flat"
    nprobe: int | None = None  # IVF kinds: inverted lists searched per query (default lists / 16, at most 128)
    embedder: str | None = None  # index build: the encoder; elsewhere: checked against the index's own
    bm25_engine: str = "auto"  # index build: bm25s, tantivy or auto (by size); elsewhere: checked like embedder
    bm25_search: str | None = None  # exact or two-stage (None: exact, or what a frozen program recorded)
    rrf_k: int = 60
    fuse_index: list[str] = field(default_factory=list)  # other indexes of the corpus fused in hybrid mode
    lm: str = "local:qwen2.5-coder-1.5b"
    hypothesis_lm: str | None = None
    answer_lm: str | None = None
    judge_lm: str | None = None
    api_base: str | None = None
    api_bases: list[str] = field(default_factory=list)  # several endpoints of one model: one LM behind a Router
    hypothesis_api_bases: list[str] = field(default_factory=list)  # a role's own endpoints (default: api_bases)
    answer_api_bases: list[str] = field(default_factory=list)
    judge_api_bases: list[str] = field(default_factory=list)
    api_key: str | None = None
    max_tokens: int = 512
    timeout: float | None = None
    retries: int = 3
    no_cache: bool = False
    adapter: str = "auto"
    context_tokens: int | None = None
    speculative: str = "none"  # the embedded engine's speculative decoding: none, ngram, ngram-mod, draft[:MODEL]
    methods: str = "cot,rag"
    program: str | None = None
    limit: int | None = None
    seed: int = 0
    threads: int = 1
    out: str | None = None
    skip_bad_rows: bool = False
    dur: bool = False
    baseline: str = "rag"  # the method reports test every other against (paired McNemar, margin)
    debug: bool = False
    track: str | None = None  # an MLflow tracking URI: the job is logged as an MLflow run (hyporag[mlflow])
    program_settings: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # setting -> where it came from (flag, file, default)

    def __post_init__(self) -> None:
        """Settings given in Python are checked as a project file's are: one line naming the field, never a raw
        TypeError later. A path may be a Path, `methods` a list, the endpoint lists tuples."""
        if isinstance(self.methods, (list, tuple)):
            object.__setattr__(self, "methods", ",".join(map(str, self.methods)))
        for name, hint in typing.get_type_hints(RunConfig).items():
            value = getattr(self, name)
            kind = _base_type(hint)
            if kind is str and isinstance(value, os.PathLike):
                object.__setattr__(self, name, value := os.fspath(value))
            if kind is list and isinstance(value, tuple):
                object.__setattr__(self, name, value := list(value))
            if value is not None:
                _check_type("RunConfig", name, value, kind)
        if self.bm25_search not in (None, "exact", "two-stage"):
            raise ConfigError(f"RunConfig: bm25_search must be exact or two-stage, got {self.bm25_search!r}")
        for name in ("limit", "threads"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"RunConfig: {name} must be 1 or more, got {value}")

    @property
    def protocol(self):
        """The protocol the run's programs (a frozen --program's own, once `artifact_config` applied it) run under."""

        return protocol_of(self.program_settings)

    def endpoints(self, role: str | None = None) -> list[str]:
        """The endpoints serving `role` (or every role): its own, else `api_bases`, else `api_base`; none: the
        model string's own provider, or the embedded model."""
        own = getattr(self, f"{role}_api_bases") if role else []
        return list(own or self.api_bases or ([self.api_base] if self.api_base else []))

    @property
    def method_list(self) -> list[str]:
        return [m.strip() for m in self.methods.split(",") if m.strip()]

    def replace(self, **changes: Any) -> RunConfig:
        return dataclasses.replace(self, **changes)


RUN_FIELDS = {f.name for f in fields(RunConfig)} - {"program_settings", "sources"}


def program_fields() -> set[str]:
    return {name for config in CONFIGS for name in config.__dataclass_fields__}


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


def _field_types() -> dict[str, type]:
    """The base type of every run and program setting (int for `int | None`), to check a project file's values."""

    out: dict[str, type] = {}
    for config in CONFIGS:
        for name, hint in typing.get_type_hints(config).items():
            out.setdefault(name, _base_type(hint))
    for name, hint in typing.get_type_hints(RunConfig).items():
        out[name] = _base_type(hint)
    return out


def where(origin: str, key: str) -> str:
    """Where a setting came from, as a user would look for it: `--budget`, `hyporag.toml: budget`, `RunConfig.x`."""
    if origin == "RunConfig":
        return f"RunConfig.{key}"
    return f"--{key.replace('_', '-')}" if origin == "command line" else f"{origin}: {key}"


def _check_type(origin: str, key: str, value: Any, kind: type | None) -> None:
    names = {int: "a whole number", float: "a number", str: "a string", bool: "true or false", list: "a list",
             tuple: "a list", dict: "a table"}
    if kind is None or kind not in names:
        return
    ok = (isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float
          else isinstance(value, (list, tuple)) if kind in (list, tuple)
          else isinstance(value, int) and not isinstance(value, bool) if kind is int
          else isinstance(value, kind))
    if not ok:
        raise ConfigError(f"{where(origin, key)}: must be {names[kind]}, got {value!r}")


def build_run_config(flags: dict[str, Any], project: dict[str, Any] | None = None,
                     project_path: str | None = None, table: dict[str, Any] | None = None,
                     table_origin: str | None = None) -> RunConfig:
    """Merge defaults < project file (top level, then the command's table) < flags given on the command line into
    one RunConfig; a value of the wrong type, or a --limit below 1, is refused naming where it came from."""
    types = _field_types()
    program_names = program_fields()
    run: dict[str, Any] = {}
    program: dict[str, Any] = {}
    sources: dict[str, str] = {}
    layers = ((project_path or PROJECT_FILE, project or {}), (table_origin or PROJECT_FILE, table or {}),
              ("command line", flags))
    for origin, values in layers:
        for key, value in values.items():
            if value is None:
                continue
            key = key.replace("-", "_")
            if key in RUN_FIELDS or key in program_names:
                _check_type(origin, key, value, types.get(key))
            if key in RUN_FIELDS:
                run[key] = value
            elif key in program_names:
                program[key] = value
            elif origin == "command line":
                continue  # a command's own flag (--question, --optimizer, ...): not a shared setting
            else:
                raise ConfigError(f"{origin}: unknown setting {key!r} (run settings: {', '.join(sorted(RUN_FIELDS))}; "
                                  f"program settings: {', '.join(sorted(program_names))})")
            sources[key] = origin
    for key in ("limit", "threads"):  # `order[:0]` would mean every question, `order[:-1]` all but one
        if key in run and run[key] < 1:
            raise ConfigError(f"{where(sources[key], key)}: must be 1 or more, got {run[key]}"
                              + ("; omit it to run every question" if key == "limit" else ""))
    return RunConfig(**run, program_settings=program, sources=sources)
