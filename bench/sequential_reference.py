"""The reference values tests/eval/fixtures/betting_cs_reference.json holds: confseq's own computation of the hedged
capital confidence sequence (Waudby-Smith and Ramdas 2024) on three seeded streams, with replacement and (`wor-`)
as the whole of a finite population read without replacement, for hyporag's implementation
(hyporag.eval.sequential) to be checked against; and (`test`) the capital of the two-sided betting test with
approximate-GRAPA bets at the null mean 1/2 (hyporag.eval.betting_test), confseq's `betting_mart` with the
positive bettor's bets max(aKelly, 0) and the negative's max(-aKelly, 0), aKelly truncated at 0.9 with its prior
worth a tenth of an observation, the two capitals averaged.

confseq does not build on this machine (its C++ part needs CMake packages that are not here), so its pure-Python
betting code is read from a checkout you give: `git clone https://github.com/gostevehoward/confseq`, then

    .venv/bin/python bench/sequential_reference.py --confseq-src confseq/src \
        --out tests/eval/fixtures/betting_cs_reference.json

confseq's `hedged_cs` passes the candidate mean as the negative bettor's truncation (its second positional argument),
which bets less than the paper states; `betting_cs` configured with the paper's bets on both sides is the paper's
sequence, and is what is recorded.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
from pathlib import Path

import numpy as np

STREAMS = (("uniform", 1, "uniform", 200), ("accuracy", 2, "three-point", 200), ("skewed", 3, "beta", 300))


def streams() -> dict[str, np.ndarray]:
    out = {}
    for name, seed, kind, n in STREAMS:
        rng = np.random.default_rng(seed)
        if kind == "uniform":
            x = rng.uniform(0, 1, n)
        elif kind == "three-point":  # a paired accuracy difference in {-1, 0, 1}, mapped to [0, 1]
            x = rng.choice([0.0, 0.5, 1.0], size=n, p=[0.15, 0.6, 0.25])
        else:
            x = rng.beta(2, 5, n)
        out[name] = x.round(6)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--confseq-src", required=True, help="the src/ folder of a confseq checkout")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    np.float_ = np.float64  # confseq's type hints predate NumPy 2
    sys.modules["multiprocess"] = types.ModuleType("multiprocess")  # only its parallel grid uses it
    package = types.ModuleType("confseq")  # its __init__ imports the compiled part: load the Python modules alone
    package.__path__ = [str(Path(args.confseq_src) / "confseq")]
    sys.modules["confseq"] = package
    from confseq.betting import betting_cs, betting_mart
    from confseq.betting_strategies import lambda_aKelly, lambda_predmix_eb

    def bets(x, m):  # each bettor's bets tuned at alpha / 2, as betting_mart's own default with theta 1/2
        return lambda_predmix_eb(x, alpha=0.025)

    def up(x, m):  # the prior worth a tenth of an observation, as hyporag.eval.betting_test's
        return np.maximum(lambda_aKelly(x, m, fake_obs=0.1, trunc_scale=0.9), 0)

    def down(x, m):
        return np.maximum(-lambda_aKelly(x, m, fake_obs=0.1, trunc_scale=0.9), 0)

    cases = {}
    for name, x in streams().items():
        for population in (None, len(x)):
            lower, upper = betting_cs(x, lambdas_fns_positive=[bets], lambdas_fns_negative=[bets], alpha=0.05,
                                      N=population, breaks=1000, running_intersection=True, convex_comb=False,
                                      theta=0.5, trunc_scale=0.5, m_trunc=True)
            cases[name if population is None else f"wor-{name}"] = {
                "x": x.tolist(), "population": population, "lower": [round(v, 6) for v in lower],
                "upper": [round(v, 6) for v in upper]}
        capital = betting_mart(x, 0.5, lambdas_fn_positive=up, lambdas_fn_negative=down, convex_comb=True,
                               theta=0.5, trunc_scale=1.0, m_trunc=True)
        cases[f"test-{name}"] = {"x": x.tolist(), "log_capital": [round(float(np.log(v)), 9) for v in capital]}
    source = ("confseq betting.betting_cs, both bettors lambda_predmix_eb(x, alpha=0.025) (tuned at alpha / 2), theta "
              "1/2, trunc_scale 1/2, m_trunc, 1000 breaks, running intersection; wor- cases with N = the stream's "
              "length; test- cases: betting.betting_mart at m = 1/2, bettors max(+-lambda_aKelly(trunc_scale=0.9, "
              "fake_obs=0.1), 0), convex_comb, theta 1/2 (bench/sequential_reference.py)")
    Path(args.out).write_text(json.dumps({"source": source, "alpha": 0.05, "cases": cases}, separators=(",", ":")))
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
