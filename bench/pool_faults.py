"""A long cot run against a pool of two faulty OpenAI-compatible servers, one killed mid-run, beside the same run
against one clean server: are the rows identical, and what do the faults cost in seconds?

Each faulty server answers 5% of requests with HTTP 500, hangs 2% for 4 s (past the run's timeout) and cuts 2% of
bodies short (hyporag.testing.fake_openai's seeded Faults); the first is killed once it has served a third of the
questions. Both runs use the same questions, 8 threads and no cache; the rows are compared question by question
(answer, correctness, option log-probabilities, error).

    .venv/bin/python bench/pool_faults.py --questions 10000 --out runs/pool-faults
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hyporag  # noqa: E402
from hyporag import RunConfig  # noqa: E402
from hyporag.testing import Faults, fake_openai  # noqa: E402
from tests.lm.test_server_pool_config import questions, reply_of, served_rows  # noqa: E402


def run(bases: list[str], examples: list[dict], out: Path, timeout: float) -> tuple[float, dict]:
    started = time.perf_counter()
    report = hyporag.evaluate(RunConfig(methods="cot", out=str(out), lm="openai/m", api_bases=bases, api_key="k",
                                        no_cache=True, threads=8, timeout=timeout), examples=examples,
                              progress=False)
    return time.perf_counter() - started, report.endpoints


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds a call may take (hangs last 4 s)")
    parser.add_argument("--out", default="runs/pool-faults")
    args = parser.parse_args()
    out = Path(args.out)
    if out.exists():
        raise SystemExit(f"{out}: exists; give a new --out")
    examples = questions(args.questions)
    with fake_openai(["m"]) as clean:
        clean.reply_of = reply_of
        clean_seconds, _ = run([clean.base()], examples, out / "clean", args.timeout)
    with fake_openai(["m"]) as first, fake_openai(["m"]) as second:
        for seed, server in enumerate((first, second)):
            server.reply_of = reply_of
            server.faults = Faults(error=0.05, hang=0.02, cut=0.02, hang_seconds=4.0, seed=seed)
        killed_at: list[int] = []

        def kill_a_third_in() -> None:
            while first.completions < args.questions // 3:
                time.sleep(0.05)
            killed_at.append(first.completions)
            first.kill()

        killer = threading.Thread(target=kill_a_third_in, daemon=True)
        killer.start()
        pool_seconds, endpoints = run([first.base(), second.base()], examples, out / "pool", args.timeout)
        faults = {name: sum(server.faults.fate(n) != "ok" for n in range(1, server.completions + 1))
                  for name, server in (("first", first), ("second", second))}
    clean_rows, pool_rows = served_rows(out / "clean"), served_rows(out / "pool")
    differing = [q for q in clean_rows if clean_rows[q] != pool_rows.get(q)]
    result = {"questions": args.questions, "identical": not differing and len(pool_rows) == len(clean_rows),
              "differing": differing[:10], "errored_rows": sum(1 for r in pool_rows.values() if r[3]),
              "clean_seconds": round(clean_seconds, 1), "pool_seconds": round(pool_seconds, 1),
              "killed_after_requests": killed_at, "faults_served": faults, "endpoints": endpoints}
    (out / "result.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "endpoints"}, indent=2))
    return 0 if result["identical"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
