"""Anytime-valid paired comparisons: confidence sequences for the mean of a bounded paired difference, valid when
read after every question (Waudby-Smith and Ramdas, "Estimating means of bounded random variables by betting",
JRSS-B 2024: the hedged capital process with predictable plug-in bets), with no asymptotics.

A paired difference d in [-c, c] (c from the measure's range: hyporag.eval.measures) is mapped to
x = (d + c) / 2c in [0, 1]. For each candidate mean m on a grid, two bettors wager on x > m and x < m with
bets fixed before x arrives; their wealth is a nonnegative martingale when the mean is m, so by Ville's inequality
the wealth ever exceeds 1/alpha with probability at most alpha. The sequence at n is every m whose hedged wealth has
not: valid at every n at once, so a run may stop the moment it excludes 0 (or fits inside +-delta). The grid,
truncation (1/2), prior (mean 1/2, variance 1/4, one fake observation), each bettor's stake tuned at alpha/2 and the
running intersection follow the authors' own implementation (confseq's `betting_cs` as its `hedged_cs` calls it);
tests check the bounds against values it computed. hyporag.eval.comparisons reads the band and "equivalent" from
it, and "better"/"worse" from the betting test (hyporag.eval.betting_test), which decides sooner.

Sampling without replacement from a finite set of N questions (a study's validation questions in their seeded
order, where the question is each trial's score on exactly those): the bettors wager against the mean of what is
left, (N m - S_{t-1}) / (N - t + 1), a candidate mean that leaves the rest outside [0, 1] is impossible, and the
known part bounds the total (the paper's section 6; confseq's `N=`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np


class BettingCS:
    """A confidence sequence for the mean of observations in [low, high], updated one observation at a time
    (O(grid) per update)."""

    def __init__(self, low: float, high: float, alpha: float = 0.05, grid: int = 1000, theta: float = 0.5,
                 trunc: float = 0.5, population: int | None = None):
        if not 0 < alpha < 1 or high <= low:
            raise ValueError(f"alpha in (0, 1) and low < high, got alpha={alpha}, [{low}, {high}]")
        if population is not None and population < 1:
            raise ValueError(f"population must be a positive count of observations, got {population}")
        self.population = population
        self.impossible: np.ndarray | None = None  # without replacement: means the observations so far rule out
        self.low, self.high, self.alpha, self.grid = float(low), float(high), float(alpha), int(grid)
        self.m = np.arange(0, grid + 1) / grid
        self.theta, self.trunc = theta, trunc
        self.log_plus = np.zeros(len(self.m))
        self.log_minus = np.zeros(len(self.m))
        self.n, self.total, self.squares = 0, 0.0, 0.0  # running sums for the plug-in mean and variance
        self.mu, self.sigma2 = 0.5, 0.25  # the predictable estimates (prior before any observation)
        self.lower, self.upper = low, high

    def update(self, value: float) -> tuple[float, float]:
        """Add one observation; the sequence's (lower, upper) now, in the observations' own units."""
        if not self.low - 1e-9 <= value <= self.high + 1e-9:
            raise ValueError(f"observation {value} is outside [{self.low}, {self.high}]")
        x = min(1.0, max(0.0, (value - self.low) / (self.high - self.low)))
        t = self.n + 1
        if self.population is not None and t > self.population:
            raise ValueError(f"observation {t} of a population of {self.population}: sampled without replacement, "
                             "there are no more")
        # each bettor's stake tuned at alpha / 2 (confseq's betting_mart with theta 1/2, and hedged_cs since 0.0.10)
        bet = math.sqrt(2 * math.log(2 / self.alpha) / (t * math.log(1 + t) * self.sigma2))
        centre = self.m if self.population is None else (
            (self.population * self.m - self.total) / (self.population - t + 1))
        with np.errstate(divide="ignore", invalid="ignore"):
            plus = np.minimum(bet, self.trunc / centre)
            minus = np.minimum(bet, self.trunc / (1 - centre))
            self.log_plus += np.log1p(plus * (x - centre))
            self.log_minus += np.log1p(-minus * (x - centre))
        if self.population is not None:
            outside = (centre < 0) | (centre > 1)
            self.impossible = outside if self.impossible is None else self.impossible | outside
        self.n, self.total = t, self.total + x
        self.mu = min((0.5 + self.total) / (t + 1), 1.0)
        self.squares += (x - self.mu) ** 2
        self.sigma2 = (0.25 + self.squares) / (t + 1)
        wealth = np.maximum(math.log(self.theta) + self.log_plus, math.log(1 - self.theta) + self.log_minus)
        inside_mask = wealth < math.log(1 / self.alpha)
        if self.impossible is not None:
            inside_mask &= ~self.impossible
        inside = np.flatnonzero(inside_mask)
        low, high = 0.0, 1.0
        if len(inside):
            low = max(0.0, self.m[inside[0]] - 1 / self.grid)
            high = min(1.0, self.m[inside[-1]] + 1 / self.grid)
        if self.population is not None:  # the part seen bounds the whole: the rest lies in [0, 1]
            low = max(low, self.total / self.population)
            high = min(high, (self.total + self.population - t) / self.population)
        if len(inside) or self.population is not None:
            width = self.high - self.low
            self.lower = max(self.lower, self.low + width * low)  # the running intersection: still valid
            self.upper = min(self.upper, self.low + width * high)
        return self.lower, self.upper

    def extend(self, values: Iterable[float]) -> tuple[float, float]:
        for value in values:
            self.update(value)
        return self.lower, self.upper


def outcome_of(lower: float, upper: float, delta: float) -> str:
    """better / worse when the sequence excludes 0; equivalent when it lies inside +-delta; else undecided."""
    if lower > 0:
        return "better"
    if upper < 0:
        return "worse"
    if delta > 0 and -delta < lower and upper < delta:
        return "equivalent"
    return "undecided"
