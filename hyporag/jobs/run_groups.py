"""A run's shared settings in the groups a reader looks for them in: the questions and corpus (data), the index and
how it is searched (index), the LMs and how they are called (lms), how the run executes (control) and where it is
logged (tracking). Each group checks its own fields' types and ranges, in one line naming the field."""

from __future__ import annotations

import dataclasses
import os
import typing
from dataclasses import dataclass, field, fields
from typing import Any

from hyporag.foundation.errors import ConfigError
from hyporag.programs.config import _base_type

TYPE_NAMES = {int: "a whole number", float: "a number", str: "a string", bool: "true or false", list: "a list",
              tuple: "a list", dict: "a table"}


def where(origin: str, key: str) -> str:
    """Where a setting came from, as a user would look for it: `--budget`, `hyporag.toml: budget`, `RunConfig.x`."""
    if origin.endswith(("Config", "Settings", "Control")) and " " not in origin:
        return f"{origin}.{key}"
    return f"--{key.replace('_', '-')}" if origin == "command line" else f"{origin}: {key}"


def check_type(origin: str, key: str, value: Any, kind: type | None) -> None:
    """Refuse a value that is not its field's type, naming where it came from (an int may stand for a float)."""
    if kind is None or kind not in TYPE_NAMES:
        return
    ok = (isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float
          else isinstance(value, (list, tuple)) if kind in (list, tuple)
          else isinstance(value, int) and not isinstance(value, bool) if kind is int
          else isinstance(value, kind))
    if not ok:
        raise ConfigError(f"{where(origin, key)}: must be {TYPE_NAMES[kind]}, got {value!r}")


@dataclass(frozen=True)
class SettingsGroup:
    """One group: its fields are checked on construction (a path may be a Path, a list a tuple)."""

    def __post_init__(self) -> None:
        owner = type(self).__name__
        for name, hint in typing.get_type_hints(type(self)).items():
            value = getattr(self, name)
            kind = _base_type(hint)
            if kind is str and isinstance(value, os.PathLike):
                object.__setattr__(self, name, value := os.fspath(value))
            if kind is list and isinstance(value, tuple):
                object.__setattr__(self, name, value := list(value))
            if value is not None:
                check_type(owner, name, value, kind)
        self.check()

    def check(self) -> None:
        """A group's own range rules (a type is checked already)."""

    def replace(self, **changes: Any):
        return dataclasses.replace(self, **changes)

    @classmethod
    def field_names(cls) -> set[str]:
        return {f.name for f in fields(cls)}


def _at_least_one(owner: str, name: str, value: int | None) -> None:
    if value is not None and value < 1:  # `order[:0]` would mean every question, `order[:-1]` all but one
        raise ConfigError(f"{owner}.{name}: must be 1 or more, got {value}"
                          + ("; omit it to run every question" if name == "limit" else ""))


@dataclass(frozen=True)
class DataSettings(SettingsGroup):
    """Which questions and which corpus."""

    data_dir: str | None = None
    dataset: str | None = None
    corpus: str | None = None
    limit: int | None = None
    seed: int = 0
    skip_bad_rows: bool = False

    def check(self) -> None:
        _at_least_one("DataSettings", "limit", self.limit)


@dataclass(frozen=True)
class IndexSettings(SettingsGroup):
    """The index and how it is searched."""

    index_dir: str | None = None
    retriever: str | None = None
    faiss: str = "flat"
    nprobe: int | None = None  # IVF kinds: inverted lists searched per query (default lists / 16, at most 128)
    embedder: str | None = None  # index build: the encoder; elsewhere: checked against the index's own
    bm25_engine: str = "auto"  # index build: bm25s, tantivy or auto (by size); elsewhere: checked like embedder
    bm25_search: str | None = None  # exact or two-stage (None: exact, or what a frozen program recorded)
    rrf_k: int = 60
    fuse_index: list[str] = field(default_factory=list)  # other indexes of the corpus fused in hybrid mode

    def check(self) -> None:
        if self.bm25_search not in (None, "exact", "two-stage"):
            raise ConfigError(f"IndexSettings.bm25_search: must be exact or two-stage, got {self.bm25_search!r}")


@dataclass(frozen=True)
class LMSettings(SettingsGroup):
    """The LMs of each role, their endpoints and how they are called."""

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

    def endpoints(self, role: str | None = None) -> list[str]:
        """The endpoints serving `role` (or every role): its own, else `api_bases`, else `api_base`; none: the
        model string's own provider, or the embedded model."""
        own = getattr(self, f"{role}_api_bases") if role else []
        return list(own or self.api_bases or ([self.api_base] if self.api_base else []))


@dataclass(frozen=True)
class RunControl(SettingsGroup):
    """How the run executes and what it reports against."""

    program: str | None = None  # a frozen artifact directory to run instead of `methods`
    threads: int = 1
    out: str | None = None
    dur: bool = False
    baseline: str = "rag"  # the method reports test every other against (paired McNemar, margin)
    debug: bool = False

    def check(self) -> None:
        _at_least_one("RunControl", "threads", self.threads)


@dataclass(frozen=True)
class TrackingSettings(SettingsGroup):
    """Where the run is logged."""

    track: str | None = None  # an MLflow tracking URI: the job is logged as an MLflow run (hyporag[mlflow])


GROUPS: dict[str, type[SettingsGroup]] = {"data": DataSettings, "index": IndexSettings, "lms": LMSettings,
                                          "control": RunControl, "tracking": TrackingSettings}
GROUP_OF: dict[str, str] = {name: group for group, cls in GROUPS.items() for name in cls.field_names()}


def field_types() -> dict[str, type]:
    """The base type of every run setting (int for `int | None`), to check a value before it is routed."""
    return {name: _base_type(hint) for cls in GROUPS.values() for name, hint in typing.get_type_hints(cls).items()}
