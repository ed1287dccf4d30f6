"""The base of every job's settings: a `Settings` that names errors by its job and refuses a misspelt method at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from hyporag.foundation.errors import ConfigError
from hyporag.foundation.settings import Settings
from hyporag.programs.registry import method_entry


@dataclass(frozen=True)
class JobSettings(Settings):
    job: ClassVar[str] = "job"
    OWN: ClassVar[frozenset[str]] = frozenset()  # keys this job takes although RunConfig has a field of that name

    @classmethod
    def owner(cls) -> str:
        return cls.job

    def check(self) -> None:
        for name in ("method", "methods"):  # a misspelt method is refused here, not when the job has begun
            value = getattr(self, name, None)
            for method in (value,) if isinstance(value, str) else value or ():
                if isinstance(method, str) and method:
                    try:
                        method_entry(method)
                    except ConfigError as exc:
                        self.refuse(name, str(exc))
