"""`hyporag fit`: a tuned, frozen program for a new domain in one command, stage by stage, resumable.

index → split (seeded train / validation / held-out; no optimizer sees held-out) → tune (the numbers: our Optuna
study on validation) → compile (the prompts: a teleprompter on train, validation) → freeze (the artifact) →
evaluate (untuned vs tuned vs rag on held-out, paired) → report. Each finished stage is recorded in
`<out>/fit.json` with its time and LM calls, so a killed fit re-run skips what is done.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hyporag.foundation.atomic import write_json_atomic
from hyporag.foundation.errors import HyporagError
from hyporag.lm.cost import CostMeter, live_calls
from hyporag.questions.records import question_fingerprint

STAGES = ("index", "split", "tune", "compile", "freeze", "evaluate", "report")


@dataclass(frozen=True)
class FitPlan:
    """What a fit does; its fingerprint ties `<out>/fit.json` to these settings."""

    method: str
    dataset: str
    out: str
    fractions: tuple[float, float, float] = (0.5, 0.25, 0.25)
    trials: int = 6
    optimizer: str | None = "bootstrap"  # None: numbers only
    metric: str = "accuracy"
    seed: int = 0
    max_demos: int = 2
    program_settings: tuple = ()
    questions: str = ""  # fingerprint of the dev set's contents: an edited question or gold is another fit
    objective: str = "accuracy"  # what the tune stage maximises
    baseline: str = "rag"  # what held-out compares the tuned program against

    def fingerprint(self) -> str:
        record = asdict(self)
        for key, before in (("objective", "accuracy"), ("baseline", "rag")):
            if record[key] == before:  # fits from before the setting keep their fingerprint
                del record[key]
        return hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()[:16]


def questions_fingerprint(examples: list) -> str:
    """The contents of a question set, in order: what a fit's every stage was computed from."""

    joined = "\n".join(f"{e.id}:{question_fingerprint(e)}" for e in examples)
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()[:16]


def three_way_split(examples: list, fractions: tuple[float, float, float], seed: int) -> dict[str, list]:
    """A seeded shuffle cut into disjoint train / validation / held-out lists (each at least one question)."""
    if len(fractions) != 3 or any(f <= 0 for f in fractions) or abs(sum(fractions) - 1.0) > 1e-6:
        raise HyporagError(f"--splits {fractions}: give three positive fractions that add up to 1")
    if len(examples) < 3:
        raise HyporagError(f"{len(examples)} questions are too few to split three ways")
    order = list(examples)
    random.Random(seed).shuffle(order)
    n_val = max(1, round(len(order) * fractions[1]))
    n_held = max(1, round(len(order) * fractions[2]))
    n_train = len(order) - n_val - n_held
    if n_train < 1:
        raise HyporagError(f"{len(order)} questions leave no training question with --splits {fractions}")
    return {"train": order[:n_train], "val": order[n_train:n_train + n_val], "heldout": order[n_train + n_val:]}


class FitStopped(Exception):
    """`--max-minutes` reached at a stage boundary: the fit stops cleanly (every finished stage kept) and the same
    command resumes it. `where` names the stage it stopped before."""

    def __init__(self, where: str, minutes: float):
        super().__init__(f"--max-minutes {minutes:g} reached before {where}")
        self.where = where


@dataclass
class Deadline:
    """A fit's time limit, shared by every candidate's stages: each stage boundary is a place to stop."""

    minutes: float | None = None
    started: float = field(default_factory=time.monotonic)

    def check(self, where: str) -> None:
        """Raise FitStopped when the limit has passed (never before the first stage of a fit that has none)."""
        if self.minutes is not None and (time.monotonic() - self.started) / 60 >= self.minutes:
            raise FitStopped(where, self.minutes)


class FitState:
    """`<out>/fit.json`: the plan's fingerprint and each finished stage's result, written atomically."""

    def __init__(self, out: Path, plan: FitPlan):
        self.path = out / "fit.json"
        self.plan = plan
        self.data: dict[str, Any] = {"plan": asdict(plan), "fingerprint": plan.fingerprint(), "stages": {}}
        if self.path.is_file():
            saved = json.loads(self.path.read_text(encoding="utf-8"))
            before = (saved.get("plan") or {}).get("questions")
            if saved.get("fingerprint") != plan.fingerprint() and before != plan.questions:
                raise HyporagError(f"{self.path}: the questions of {plan.dataset} have changed since this fit "
                                   "(text, options or gold; its held-out accuracies would be the old questions'); use "
                                   "another --out")
            if saved.get("fingerprint") != plan.fingerprint():
                raise HyporagError(f"{self.path}: this directory holds a fit with other settings "
                                   f"({self.differing(saved)}); use another --out (a fit never overwrites another)")
            self.data = saved
        else:  # on record from the start: a fit stopped before its first stage is still this fit (and resumes)
            write_json_atomic(self.path, self.data)

    def differing(self, saved: dict) -> str:
        """The plan's settings that differ from a saved fit's, as `name: then -> now`."""
        before, now = saved.get("plan") or {}, json.loads(json.dumps(asdict(self.plan), default=str))
        names = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
        return "; ".join(f"{k}: {before.get(k)!r} then, {now.get(k)!r} now" for k in names) or "its fingerprint"

    def forget(self, stages: tuple[str, ...]) -> None:
        """Drop these stages' records, so the next run does them again (their inputs changed)."""
        for stage in stages:
            self.data["stages"].pop(stage, None)
        write_json_atomic(self.path, self.data)

    def done(self, stage: str) -> dict | None:
        return self.data["stages"].get(stage)

    def finish(self, stage: str, result: dict) -> None:
        self.data["stages"][stage] = result
        write_json_atomic(self.path, self.data)


def run_stage(state: FitState, stage: str, work: Callable[[], dict], log: Callable[[str], None],
              stages: tuple[str, ...] = STAGES, deadline: Deadline | None = None, where: str = "") -> dict:
    """Run `work` unless the stage is already recorded; log one line with its time and LM calls. A `deadline`
    that has passed stops the fit before a stage that is not done (FitStopped)."""
    number = stages.index(stage) + 1
    previous = state.done(stage)
    if previous is not None:
        log(f"[{number}/{len(stages)}] {stage}: done before ({previous.get('summary', '')}), skipped")
        return previous
    if deadline is not None:
        deadline.check(f"{where}{stage}")
    log(f"[{number}/{len(stages)}] {stage} ...")
    meter, started = CostMeter(), time.perf_counter()
    with meter.step(stage):
        result = work()
    cost = meter.roles[stage]
    result = {**result, "seconds": round(time.perf_counter() - started, 1), "lm_calls": live_calls(cost),
              "cache_hits": int(cost.get("cache_hits", 0)),
              "input_tokens": int(cost["input_tokens"]), "output_tokens": int(cost["output_tokens"])}
    state.finish(stage, result)
    log(f"[{number}/{len(stages)}] {stage}: {result.get('summary', 'done')} ({result['seconds']:.0f} s, "
        f"{result['lm_calls']} LM calls)")
    return result
