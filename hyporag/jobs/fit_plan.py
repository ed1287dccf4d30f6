"""What a fit is and where it stands: its plan (the FitSettings it runs with, and what it was given), its record
`<out>/fit.json` (each finished stage's result, written atomically, so a killed fit re-run skips what is done), its
time limit, and the fit directory and result a caller gets back."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hyporag.foundation.atomic import write_json_atomic
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.builders import select_examples
from hyporag.jobs.program import load_program
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import FitSettings
from hyporag.lm.cost import CostMeter, live_calls
from hyporag.questions.datasets import load_benchmark

STAGES = ("index", "split", "tune", "compile", "freeze", "evaluate", "report")
# the FitSettings that change what a fit computes (a time limit, a storage location or the selection rule do not:
# the rule is applied again to the kept validation rows when it changes)
PLAN_FIELDS = ("splits", "trials", "optimizer", "metric", "auto", "max_demos", "max_metric_calls", "reflection_lm",
               "modes", "objective")


@dataclass(frozen=True)
class FitPlan:
    """A fit: the settings it runs with (held, not copied) and what it was given; its fingerprint ties
    `<out>/fit.json` to them."""

    settings: FitSettings
    method: str  # one method, or the candidates joined with commas
    dataset: str
    seed: int = 0
    program: tuple = ()  # the program settings the run was given, as sorted (name, JSON) pairs
    questions: str = ""  # fingerprint of the dev set's contents: an edited question or gold is another fit
    baseline: str = "rag"  # what held-out compares the tuned program against

    @classmethod
    def of(cls, settings: FitSettings, run: RunConfig, method: str, questions: str) -> FitPlan:
        return cls(settings, method, run.data.dataset, run.data.seed,
                   tuple(sorted((k, json.dumps(v)) for k, v in run.program_settings.items())), questions,
                   run.control.baseline)

    def record(self) -> dict[str, Any]:
        """The plan as fit.json keeps it (JSON's types, so a saved plan compares equal to a new one)."""
        record = {"method": self.method, "dataset": self.dataset, "seed": self.seed, "program": self.program,
                  "questions": self.questions, "baseline": self.baseline,
                  **{name: getattr(self.settings, name) for name in PLAN_FIELDS}}
        return json.loads(json.dumps(record))

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.record(), sort_keys=True).encode()).hexdigest()[:16]


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
    """`<out>/fit.json`: the plan, its fingerprint and each finished stage's result, written atomically."""

    def __init__(self, out: Path, plan: FitPlan):
        self.path = out / "fit.json"
        self.plan = plan
        self.data: dict[str, Any] = {"plan": plan.record(), "fingerprint": plan.fingerprint(), "stages": {}}
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
        before, now = saved.get("plan") or {}, self.plan.record()
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


def fit_questions(settings: FitSettings, run: RunConfig):
    """(the load report, the questions a fit splits, its directory): `--limit` picks the questions `eval` and `tune`
    pick (a seeded shuffle, then the first N), not the file's first N, which on a comma-joined dataset or a file
    sorted by topic would leave whole topics out; a file where the directory should be is refused."""
    loaded = load_benchmark(run.data.dataset, run.data.data_dir, skip_bad_rows=run.data.skip_bad_rows)
    examples = select_examples(loaded.examples, run.data.limit, run.data.seed)
    out = Path(settings.out)
    if out.exists() and not out.is_dir():
        raise HyporagError(f"{out}: is a file, not a directory; give --out a directory")
    out.mkdir(parents=True, exist_ok=True)
    return loaded, examples, out


@dataclass
class FitResult:
    """The fit directory, its stages (fit.json's content) and the frozen artifact."""

    out: Path
    state: dict[str, Any]

    @property
    def artifact(self) -> Path:
        return self.out / "artifact"

    @property
    def heldout_accuracy(self) -> dict[str, float]:
        """Held-out accuracy: of rag, the untuned and the tuned program; of a multi-method fit, its chosen program,
        rag, cot and the runner-up."""
        return self.state["stages"]["evaluate"]["accuracy"]

    @property
    def stopped(self) -> str | None:
        """Why a fit stopped before its last stage (`max_minutes`); None when it finished."""
        return self.state.get("stopped")

    def load(self, roles=None, run: RunConfig | None = None):
        return load_program(self.artifact, roles=roles, run=run)
