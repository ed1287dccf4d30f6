"""Typed settings of each job, in the style of the method configs: fields with defaults, checked on creation.

A job is `hyporag.<job>(settings, run=RunConfig(...), ...)`. `RunConfig` holds what every job shares (data, LMs,
index, seed, threads); these hold what one job adds. `from_dict` reads a project file's `[fit]`, `[tune]`, ...
table (or any mapping), refusing an unknown key or a wrong-typed value naming where it came from.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from hyporag.eval.shards import Shard
from hyporag.foundation.errors import ConfigError
from hyporag.programs.config import _base_type
from hyporag.programs.registry import method_entry

OPTIMIZERS = ("bootstrap", "bootstrap-rs", "mipro", "gepa")
METRICS = ("accuracy", "dur", "combined")
OBJECTIVES = ("accuracy", "log-p-gold", "margin")
AUTO = ("light", "medium", "heavy")


@dataclass(frozen=True)
class JobSettings:
    job: ClassVar[str] = "job"
    CHOICES: ClassVar[dict[str, tuple]] = {}
    OWN: ClassVar[frozenset[str]] = frozenset()  # keys this job takes although RunConfig has a field of that name

    def __post_init__(self) -> None:
        for name, allowed in self.CHOICES.items():
            value = getattr(self, name)
            if value is not None and value not in allowed:
                raise ConfigError(f"{self.job}: {name} must be one of {', '.join(allowed)}, got {value!r}")
        for name in ("method", "methods"):  # a misspelt method is refused here, not when the job has begun
            value = getattr(self, name, None)
            for method in (value,) if isinstance(value, str) else value or ():
                if isinstance(method, str) and method:
                    try:
                        method_entry(method)
                    except ConfigError as exc:
                        raise ConfigError(f"{self.job}: {name}: {exc}") from None

    @classmethod
    def field_names(cls) -> set[str]:
        return {f.name for f in fields(cls)}

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "settings", base: JobSettings | None = None):
        """`base` (or the defaults) with `data` on top; `source` names where `data` came from in errors."""
        hints = typing.get_type_hints(cls)
        known = cls.field_names()
        values = dataclasses.asdict(base) if base is not None else {}
        for key, value in data.items():
            key = key.replace("-", "_")
            if key not in known:
                raise ConfigError(f"{source}: {cls.job} has no setting {key!r} (it has {', '.join(sorted(known))})")
            kind = _base_type(hints[key])
            if value is not None and kind in (int, float, str, bool, tuple, dict):
                ok = (isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float
                      else isinstance(value, (list, tuple)) if kind is tuple
                      else isinstance(value, int) and not isinstance(value, bool) if kind is int
                      else isinstance(value, kind))
                if not ok:
                    raise ConfigError(f"{source}: {key} must be {kind.__name__}, got {value!r}")
            values[key] = tuple(value) if isinstance(value, list) else value
        try:
            return cls(**values)
        except TypeError as exc:
            raise ConfigError(f"{source}: {cls.job}: {exc}") from None

    def replace(self, **changes: Any):
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class EvalSettings(JobSettings):
    """A CI gate on top of an evaluation: accuracy bars per method and a JUnit file."""

    job: ClassVar[str] = "eval"
    fail_under: dict[str, float] = field(default_factory=dict)  # method -> lowest passing accuracy
    junit: str | None = None
    shard: str | None = None  # "I/N": every N-th question of the seeded list, from the I-th (hyporag merge joins)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_shard(self.job, self.shard)
        if not isinstance(self.fail_under, dict):
            raise ConfigError(f"{self.job}: fail_under must be a table of METHOD = ACCURACY, got {self.fail_under!r}")
        for method, bar in self.fail_under.items():  # checked before any call, as --fail-under is
            if isinstance(bar, bool) or not isinstance(bar, (int, float)) or not 0.0 <= bar <= 1.0:
                raise ConfigError(f"{self.job}: fail_under.{method} = {bar!r}: an accuracy bar is a number in [0, 1] "
                                  "(0.55, not 55)")


@dataclass(frozen=True)
class SplitSettings(JobSettings):
    """Which questions an optimizer sees: a split of the run's dataset, or explicit train and validation sets."""

    method: str | None = None  # None: the run's --program's method
    metric: str = "accuracy"
    allow_test: bool = False
    out: str | None = None  # the artifact directory to write
    val_fraction: float = 0.3
    trainset: str | None = None
    valset: str | None = None

    CHOICES: ClassVar[dict[str, tuple]] = {"metric": METRICS}

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 < self.val_fraction < 1:
            raise ConfigError(f"{self.job}: val_fraction must be between 0 and 1, got {self.val_fraction}")
        if bool(self.trainset) != bool(self.valset):
            raise ConfigError(f"{self.job}: trainset and valset go together")


@dataclass(frozen=True)
class CompileSettings(SplitSettings):
    job: ClassVar[str] = "compile"
    optimizer: str = "bootstrap"
    auto: str = "light"
    max_demos: int = 2
    max_metric_calls: int | None = None  # GEPA: program runs instead of an --auto preset
    reflection_lm: str | None = None  # the LM writing new instructions (default: the hypothesis LM)

    CHOICES: ClassVar[dict[str, tuple]] = {"metric": METRICS, "optimizer": OPTIMIZERS, "auto": AUTO}


@dataclass(frozen=True)
class TuneSettings(SplitSettings):
    job: ClassVar[str] = "tune"
    study: str = "hyporag"
    trials: int = 20
    storage: str | None = None  # journal file or RDB URL; default runs/studies/<study>.journal
    modes: str | None = None  # retriever modes to search, e.g. "bm25,dense"
    heartbeat: int = 10
    objective: str = "accuracy"  # what the study maximises (eval.dspy_metrics.objective_metric)

    CHOICES: ClassVar[dict[str, tuple]] = {"metric": METRICS, "objective": OBJECTIVES}

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.trials < 0:  # 0: open the study and the index, run nothing (what a worker pool's setup does)
            raise ConfigError(f"tune: trials must be 0 or more, got {self.trials}")


@dataclass(frozen=True)
class FitSettings(JobSettings):
    job: ClassVar[str] = "fit"
    out: str | None = None  # the fit directory (its artifact is <out>/artifact)
    method: str | None = None
    splits: tuple[float, float, float] = (0.5, 0.25, 0.25)
    trials: int = 6
    optimizer: str | None = "bootstrap"  # None: tune the numbers only
    metric: str = "accuracy"
    auto: str = "light"
    max_demos: int = 2
    max_metric_calls: int | None = None
    reflection_lm: str | None = None
    storage: str | None = None
    modes: str | None = None
    allow_test: bool = False
    objective: str = "accuracy"  # what the tune stage's study maximises (eval.dspy_metrics.objective_metric)
    # several candidate methods: each tuned on the same split, one chosen on validation by a stated rule
    # (optimizers.selection), confirmed on held-out; `method` alone is the one-candidate fit
    methods: tuple[str, ...] = ()
    max_minutes: float | None = None  # stop cleanly at a stage boundary once this much time has passed (resumable)
    max_calls_per_question: float | None = None  # a candidate costing more LM calls per question is not chosen

    CHOICES: ClassVar[dict[str, tuple]] = {"metric": METRICS, "optimizer": OPTIMIZERS, "auto": AUTO,
                                           "objective": OBJECTIVES}
    OWN: ClassVar[frozenset[str]] = frozenset({"methods"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.splits) != 3 or any(not isinstance(f, (int, float)) or f <= 0 for f in self.splits) \
                or abs(sum(self.splits) - 1.0) > 1e-6:
            raise ConfigError(f"fit: splits {self.splits}: give three positive fractions that add up to 1")
        if self.trials < 1:
            raise ConfigError(f"fit: trials must be 1 or more, got {self.trials}")
        if self.method and self.methods:
            raise ConfigError("fit: give method (one candidate) or methods (several), not both")
        if isinstance(self.methods, str) or any(not isinstance(m, str) or not m for m in self.methods):
            raise ConfigError(f"fit: methods must be a list of method names, got {self.methods!r}")
        for name in ("max_minutes", "max_calls_per_question"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
                raise ConfigError(f"fit: {name} must be a number above 0, got {value!r}")


@dataclass(frozen=True)
class ReproduceSettings(JobSettings):
    job: ClassVar[str] = "reproduce"
    table: str | None = None
    datasets: tuple[str, ...] | None = None  # None: the table's own
    methods: tuple[str, ...] | None = None
    out: str = "runs/reproduce"
    shard: str | None = None  # "I/N" in every cell (give each shard its own --out; hyporag merge joins them)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_shard(self.job, self.shard)


@dataclass(frozen=True)
class EmbedSettings(JobSettings):
    """`hyporag embed`: passage vectors of a corpus in shards, on this machine or a Ray cluster (`ray` = address).
    The corpus, encoder (`embedder`) and torch threads are the RunConfig's, as for `index build`."""

    job: ClassVar[str] = "embed"
    out: str | None = None  # the vectors folder (what `index build --vectors` takes)
    ray: str | None = None  # "auto", "host:6379" or "ray://host:10001"; None: this machine
    concurrency: int = 2  # Ray actors (each loads the encoder once)
    cpus_per_actor: float = 1.0
    gpus_per_actor: float = 0.0  # 1 on a GPU cluster: one encoder per GPU
    processes: int = 1  # without Ray: sentence-transformers' multi-process pool (one per local GPU, or CPUs)
    shard_size: int = 10_000  # passages a shard: the unit of resuming
    batch_size: int = 64
    window: int = 100_000  # passages handed to Ray at a time (bounds the driver's memory)
    max_seq_length: int | None = None
    max_passage_chars: int = 1800  # split long passages as `index build` does, so the ids match its store

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("concurrency", "processes", "shard_size", "batch_size", "window", "max_passage_chars"):
            if getattr(self, name) < 1:
                raise ConfigError(f"embed: {name} must be 1 or more, got {getattr(self, name)}")
        if self.cpus_per_actor <= 0 or self.gpus_per_actor < 0:
            raise ConfigError("embed: cpus_per_actor must be > 0 and gpus_per_actor >= 0")
        if self.ray and self.processes > 1:
            raise ConfigError("embed: processes is for this machine; on Ray give concurrency (actors) instead")


def check_shard(job: str, shard: str | None) -> None:
    if shard is not None:
        Shard.parse(shard, f"{job}: shard")


JOBS: dict[str, type[JobSettings]] = {s.job: s for s in (EvalSettings, CompileSettings, TuneSettings, FitSettings,
                                                         ReproduceSettings, EmbedSettings)}
