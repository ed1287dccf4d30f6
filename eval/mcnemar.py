"""Paired comparison of two methods on the same questions: exact McNemar test on the discordant pairs."""

from __future__ import annotations

from math import comb


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact p-value: under H0 the b discordant wins among b+c pairs are Binomial(b+c, 1/2)."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(0, min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_comparison(rows_a: dict[str, bool], rows_b: dict[str, bool]) -> dict:
    """Accuracy difference a − b on shared question ids, discordant counts and the McNemar p-value."""
    shared = sorted(set(rows_a) & set(rows_b))
    if not shared:
        return {"n": 0, "difference": 0.0, "a_only": 0, "b_only": 0, "p_value": 1.0}
    a_only = sum(1 for q in shared if rows_a[q] and not rows_b[q])
    b_only = sum(1 for q in shared if rows_b[q] and not rows_a[q])
    return {"n": len(shared), "difference": (a_only - b_only) / len(shared), "a_only": a_only, "b_only": b_only,
            "p_value": mcnemar_exact(a_only, b_only)}
