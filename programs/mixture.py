"""Per-passage answers mixed into one option distribution (REPLUG's idea, Shi et al. 2023, on the reader's options).

Each passage in the final context is read alone, and the closed-book answer is the prior. A passage's weight is a
softmax of its rank with temperature tau (rank 1 weighs most; a large tau weighs all alike), scaled to 1 - w0; the
prior weighs w0. Two rules:

- linear: p(o) = w0 p_prior(o) + (1 - w0) sum_i w_i p_i(o), a mixture, so no one passage can carry the answer
  alone unless it weighs most;
- loglinear: log p(o) = w0 log p_prior(o) + (1 - w0) sum_i w_i log p_i(o) + const, a product of experts, where an
  option any weighty reading rules out stays unlikely.

With w0 = 0 and one passage, either rule gives that passage's distribution. A reading without a distribution (the
backend gave no probabilities, or only part of them) is left out and the other passages share its weight (the
prior keeps w0); with no distribution at all the readings vote (their letters, weighted as above) and the mixture
has no probabilities.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MIX_RULES = ("linear", "loglinear")
Distribution = dict[str, float]  # option letter -> log-probability, over the options


def rank_weights(count: int, temperature: float) -> list[float]:
    """Softmax of -rank / temperature over `count` passages in context order (they sum to 1)."""
    if count <= 0:
        return []
    if temperature <= 0:
        raise ValueError(f"the mixture's temperature must be > 0, got {temperature}")
    raw = [math.exp(-rank / temperature) for rank in range(count)]
    total = sum(raw)
    return [w / total for w in raw]


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def mix(prior: Distribution | None, readings: Sequence[Distribution | None], letters: Sequence[str],
        prior_weight: float, temperature: float, rule: str = "linear") -> tuple[Distribution | None, list[float]]:
    """The mixed distribution (log-probabilities over `letters`, or None when no reading has one) and the weight
    each input had in it: the prior first, then the readings in context order (0 for one left out)."""
    if rule not in MIX_RULES:
        raise ValueError(f"unknown mixture rule {rule!r}: use {' or '.join(MIX_RULES)}")
    if not 0 <= prior_weight <= 1:
        raise ValueError(f"the prior's weight must be in [0, 1], got {prior_weight}")
    ranked = [w if r is not None else 0.0 for w, r in zip(rank_weights(len(readings), temperature), readings,
                                                         strict=True)]
    share = sum(ranked)
    if share == 0 and prior is None:
        return None, [0.0] * (len(readings) + 1)
    if share == 0:  # no passage has a distribution: the prior is all there is
        weights = [1.0] + [0.0] * len(readings)
    else:  # the prior keeps w0; the passages that have distributions share the rest
        w0 = prior_weight if prior is not None else 0.0
        weights = [w0] + [(1 - w0) * w / share for w in ranked]
    inputs = [prior, *readings]
    used = [(w, d) for w, d in zip(weights, inputs, strict=True) if w > 0 and d is not None]
    if rule == "linear":
        mixed = {o: _logsumexp([math.log(w) + d[o] for w, d in used]) for o in letters}
    else:
        mixed = {o: sum(w * d[o] for w, d in used) for o in letters}
        norm = _logsumexp(list(mixed.values()))
        mixed = {o: v - norm for o, v in mixed.items()}
    return {o: round(v, 6) for o, v in mixed.items()}, [round(w, 6) for w in weights]


def vote(prior: str | None, answers: Sequence[str | None], letters: Sequence[str], prior_weight: float,
         temperature: float) -> str | None:
    """Without probabilities: the letter with the most weight among the readings' answers (ties: the earlier
    letter in the options' order)."""
    ranked = rank_weights(len(answers), temperature)
    totals = dict.fromkeys(letters, 0.0)
    if prior in totals:
        totals[prior] += prior_weight
    for weight, answer in zip(ranked, answers, strict=True):
        if answer in totals:
            totals[answer] += (1 - prior_weight) * weight
    best = max(totals.values())
    return next((o for o in letters if totals[o] == best), None) if best > 0 else None
