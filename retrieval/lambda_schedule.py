"""λ for contrastive retrieval: fixed, or adapted per question from how similar H+ and H− are.

When the mimic is nearly the same statement as the target (cosine near 1), subtracting it would also push away
the passages that support the target, so adaptive schedules lower λ as the similarity rises.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from hyporag.foundation.errors import ConfigError

SCHEDULES = ("fixed", "linear", "threshold", "sigmoid")


@dataclass(frozen=True)
class LambdaSchedule:
    """λ(sim) with explicit, tunable parameters.

    fixed: λ = lam. linear: λ = lam_max·(1 − sim), clipped to [lam_min, lam_max].
    threshold: λ = lam_max if sim < tau else lam_min.
    sigmoid: λ = lam_min + (lam_max − lam_min) / (1 + e^{s·(sim − tau)}).
    """

    kind: str = "fixed"
    lam: float = 1.0
    lam_min: float = 0.0
    lam_max: float = 1.0
    tau: float = 0.7
    steepness: float = 10.0

    def __post_init__(self) -> None:
        if self.kind not in SCHEDULES:
            raise ConfigError(f"unknown λ schedule {self.kind!r}: use one of {', '.join(SCHEDULES)}")

    def __call__(self, similarity: float) -> float:
        if self.kind == "fixed":
            return self.lam
        if self.kind == "linear":
            return min(self.lam_max, max(self.lam_min, self.lam_max * (1.0 - similarity)))
        if self.kind == "threshold":
            return self.lam_max if similarity < self.tau else self.lam_min
        return self.lam_min + (self.lam_max - self.lam_min) / (1.0 + math.exp(self.steepness * (similarity - self.tau)))

    def to_dict(self) -> dict:
        return asdict(self)
