"""Typed settings of each job: `Settings` (hyporag.foundation.settings) whose fields declare their type, allowed
values, rule, flag and help once; the command line's flags are made from them.

A job is `hyporag.<job>(settings, run=RunConfig(...), ...)`. `RunConfig` holds what every job shares (data, LMs,
index, seed, threads); these hold what one job adds. `from_dict` reads a project file's `[fit]`, `[tune]`, ...
table (or any mapping), refusing an unknown key or a wrong-typed value naming where it came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from hyporag.eval.ci_gate import parse_bars
from hyporag.eval.dspy_metrics import METRICS, OBJECTIVES
from hyporag.eval.measures import DEFAULT_DECIDING, REGISTRY, measure_named
from hyporag.eval.regression import MIN_PAIRED
from hyporag.eval.shards import Shard
from hyporag.foundation.errors import ConfigError
from hyporag.foundation.settings import above, at_least, setting
from hyporag.jobs.corpus_settings import AskSettings, EmbedSettings, IndexBuildSettings
from hyporag.jobs.job_base import JobSettings
from hyporag.optimizers.teleprompter import AUTO, OPTIMIZERS


def _shard(value: Any) -> str | None:
    try:
        Shard.parse(value, "shard")
    except ConfigError as exc:
        return str(exc).split(": ", 1)[-1]
    return None


def _names(text: str) -> tuple[str, ...]:
    return tuple(m.strip() for m in text.split(",") if m.strip())


def _splits(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(","))
    except ValueError:
        raise ConfigError(f"--splits {text!r}: give three fractions, e.g. 0.5,0.25,0.25") from None


def _fraction(value: Any) -> str | None:
    return None if 0 < value < 1 else f"must be between 0 and 1, got {value}"


@dataclass(frozen=True)
class EvalSettings(JobSettings):
    """A CI gate on top of an evaluation: accuracy bars per method and a JUnit file."""

    job: ClassVar[str] = "eval"
    fail_under: dict[str, float] = setting(flag="--fail-under", default_factory=dict, action="append",
                                           metavar="METHOD=ACC", parse=parse_bars, help="exit 1 when METHOD's "
                                           "accuracy is below ACC (repeatable): a CI gate")
    junit: str | None = setting(None, flag="--junit", metavar="PATH", help="write a JUnit XML file, one test case "
                                "per method")
    shard: str | None = setting(None, flag="--shard", metavar="I/N", rule=_shard, help="run every N-th question "
                                "from the I-th, every method (one machine's part of a run; give each shard its own "
                                "--out and join them with hyporag merge)")
    until_decided: bool = setting(False, flag="--until-decided", help="answer the seeded questions in order and stop "
                                  "once every method's comparison with the baseline (or with itself in --against's "
                                  "run) is decided: better or worse by a betting test, or equivalent within --delta "
                                  "by a confidence sequence, both valid however often they are read")
    decide_on: str | None = setting(None, flag="--decide-on", metavar="MEASURE", rule=lambda v: None if v in REGISTRY
                                    else f"no deciding measure {v!r} (registered: {', '.join(REGISTRY)})",
                                    help="the measure every comparison is decided on: "
                                    f"{', '.join(REGISTRY)} (default p_gold, or accuracy when the rows hold no "
                                    "option probabilities); the others are shown beside it")
    delta: float | None = setting(None, flag="--delta", help="difference on the deciding measure within which two "
                                  "methods count as equivalent (default the measure's own: 0.05 for p_gold and "
                                  "accuracy); it must lie inside the measure's range")
    max_questions: int | None = setting(None, flag="--max-questions", rule=at_least(1), help="with --until-decided: "
                                        "stop after this many questions, decided or not")
    assume_effect: float | None = setting(None, flag="--assume-effect", metavar="D", rule=above(0), help="before the "
                                          "run, print how many questions and LM calls deciding a difference of D on "
                                          "the deciding measure is expected to take (--until-decided assumes the "
                                          "measure's planning effect)")
    plan_from: str | None = setting(None, flag="--plan-from", metavar="RUN_DIR", help="before the run, print how "
                                    "many questions and LM calls each comparison is expected to take, resampling "
                                    "its paired questions in an earlier run")
    alpha: float = setting(0.05, flag="--alpha", rule=lambda v: None if 0 < v < 1 else "must be between 0 and 1",
                           help="the error budget every report's comparisons share (default 0.05)")
    against: str | None = setting(None, flag="--against", metavar="RUN_DIR", help="compare each method with itself "
                                  "in an earlier run, paired by question: a regression gate")
    fail_if_worse: float | None = setting(None, flag="--fail-if-worse", metavar="D", rule=at_least(0),
                                          help="with --against: exit 1 when a method is worse than in the earlier "
                                          "run by more than D on the deciding measure, with the error guarantee (0: "
                                          "worse beyond chance)")
    min_paired: int = setting(MIN_PAIRED, flag="--min-paired", rule=at_least(1), help="with --against: a method "
                              f"paired on fewer questions with the earlier run fails the gate (default {MIN_PAIRED})")

    @property
    def deciding(self):
        """The deciding measure's registry entry (the default's when none is named: its fallback, accuracy, has the
        same range)."""
        return measure_named(self.decide_on or DEFAULT_DECIDING)

    def check(self) -> None:
        super().check()
        if self.fail_if_worse is not None and not self.against:
            self.refuse("fail_if_worse", "needs --against, the run to compare with")
        if self.max_questions is not None and not self.until_decided:
            self.refuse("max_questions", "is --until-decided's budget; use --limit for a fixed number of questions")
        for name in ("delta", "assume_effect", "fail_if_worse"):
            value = getattr(self, name)
            if value is not None and (name != "fail_if_worse" or value > 0):
                problem = self.deciding.check_delta(value, self.place(name))
                if problem:
                    raise ConfigError(problem)
        for method, bar in self.fail_under.items():  # checked before any call, as --fail-under is
            if isinstance(bar, bool) or not isinstance(bar, (int, float)) or not 0.0 <= bar <= 1.0:
                self.refuse("fail_under", f"{method} = {bar!r}: an accuracy bar is a number in [0, 1] (0.55, not 55)")


@dataclass(frozen=True)
class SplitSettings(JobSettings):
    """Which questions an optimizer sees: a split of the run's dataset, or explicit train and validation sets."""

    method: str | None = setting(None, flag="--method", help="method to optimize (implied by --program)")
    metric: str = setting("accuracy", flag="--metric", choices=METRICS, help="what the optimizer scores (default "
                          "accuracy)")
    allow_test: bool = setting(False, flag="--allow-test", help="permit tuning on a test split (don't)")
    out: str | None = setting(None, flag="--out", help="artifact directory to write")
    val_fraction: float = setting(0.3, flag="--val-fraction", rule=_fraction, help="validation share of the split "
                                  "(default 0.3)")
    trainset: str | None = setting(None, flag="--trainset", help="explicit train set (name or file) instead of "
                                   "splitting --dataset")
    valset: str | None = setting(None, flag="--valset", help="explicit validation set (name or file)")

    def check(self) -> None:
        super().check()
        if bool(self.trainset) != bool(self.valset):
            self.refuse("valset" if self.trainset else "trainset", "trainset and valset go together")


PROMPTS = "prompts"  # flags of the prompt optimizer (compile, fit)
STUDY = "study"  # flags of the Optuna study (tune, fit)


@dataclass(frozen=True)
class CompileSettings(SplitSettings):
    job: ClassVar[str] = "compile"
    optimizer: str = setting("bootstrap", flag="--optimizer", choices=OPTIMIZERS, help="DSPy teleprompter (default "
                             "bootstrap)")
    auto: str = setting("light", flag="--auto", choices=AUTO, help="MIPROv2/GEPA preset (default light)")
    max_demos: int = setting(2, flag="--max-demos", rule=at_least(0), help="few-shot demos per predictor (default 2)")
    max_metric_calls: int | None = setting(None, flag="--max-metric-calls", rule=at_least(1), help="GEPA: stop after "
                                           "this many program runs instead of an --auto preset (each run is a full "
                                           "program call)")
    reflection_lm: str | None = setting(None, flag="--reflection-lm", help="LM that writes new instructions (GEPA's "
                                        "reflection, MIPROv2's prompt model); default the hypothesis LM")


@dataclass(frozen=True)
class TuneSettings(SplitSettings):
    job: ClassVar[str] = "tune"
    study: str = setting("hyporag", flag="--study", help="the study's name (required on the command line)",
                         required=True)
    trials: int = setting(20, flag="--trials", rule=at_least(0), help="Optuna trials (default 20; 0 opens the study "
                          "and the index and runs nothing, as a worker pool's setup does)")
    storage: str | None = setting(None, flag="--storage", help="journal file path or RDB URL (postgresql://...); "
                                  "default a journal file under runs/studies/")
    modes: str | None = setting(None, flag="--modes", help="retriever modes to search, e.g. bm25,dense,hybrid")
    heartbeat: int = setting(10, flag="--heartbeat", rule=at_least(1), help="RDB storages: seconds between a "
                             "worker's heartbeats; a trial silent for 3 heartbeats is failed and re-queued once "
                             "(default 10)")
    objective: str = setting("accuracy", flag="--objective", choices=OBJECTIVES, help="what the study maximises: "
                             "accuracy (default; the reader's mean log p of the correct option breaks ties), "
                             "p-gold (the reports' deciding measure), log-p-gold, margin (docs/results/margin.md), "
                             "or pull (passages pulling toward the correct option; needs --answer per-passage)")


@dataclass(frozen=True)
class FitSettings(JobSettings):
    job: ClassVar[str] = "fit"
    out: str | None = setting(None, flag="--out", help="the fit directory to write (its artifact is <out>/artifact)")
    method: str | None = setting(None, flag="--method", help="one method to fit (implied by --program)")
    splits: tuple[float, float, float] = setting((0.5, 0.25, 0.25), flag="--splits", parse=_splits,
                                                 help="train,validation,held-out fractions (seeded; default "
                                                 "0.5,0.25,0.25)")
    trials: int = setting(6, flag="--trials", rule=at_least(1), help="Optuna trials per candidate (default 6)")
    optimizer: str | None = setting("bootstrap", flag="--optimizer", choices=OPTIMIZERS, help="DSPy teleprompter "
                                    "(default bootstrap; --skip-prompts for none)")
    metric: str = setting("accuracy", flag="--metric", choices=METRICS, help="default accuracy")
    auto: str = setting("light", flag="--auto", choices=AUTO, help="MIPROv2/GEPA preset (default light)")
    max_demos: int = setting(2, flag="--max-demos", rule=at_least(0), help="few-shot demos per predictor (default 2)")
    max_metric_calls: int | None = setting(None, flag="--max-metric-calls", rule=at_least(1), help="GEPA: stop after "
                                           "this many program runs instead of an --auto preset")
    reflection_lm: str | None = setting(None, flag="--reflection-lm", help="LM that writes new instructions (GEPA's "
                                        "reflection, MIPROv2's prompt model); default the hypothesis LM")
    storage: str | None = setting(None, flag="--storage", help="journal file path or RDB URL (postgresql://...); "
                                  "default a journal file inside --out")
    modes: str | None = setting(None, flag="--modes", help="retriever modes to search, e.g. bm25,dense,hybrid")
    allow_test: bool = setting(False, flag="--allow-test", help="permit fitting on a test split (don't)")
    objective: str = setting("accuracy", flag="--objective", choices=OBJECTIVES, help="what the tune stage's study "
                             "maximises: accuracy (default; log p of the correct option breaks ties), p-gold, "
                             "log-p-gold, margin, or pull (needs --answer per-passage)")
    # several candidate methods: each tuned on the same split, one chosen on validation by a stated rule
    # (optimizers.selection), confirmed on held-out; `method` alone is the one-candidate fit
    methods: tuple[str, ...] = setting((), flag="--methods", parse=_names, help="candidate methods, comma-separated: "
                                       "each tuned on the same split, one chosen on validation by a stated rule and "
                                       "confirmed on held-out (default without --method: rag,hcqr,chr,"
                                       "option-contrast; cot is always measured as the no-retrieval reference)")
    max_minutes: float | None = setting(None, flag="--max-minutes", rule=above(0), help="stop cleanly at the next "
                                        "stage boundary after this long (re-run the same command to resume)")
    max_calls_per_question: float | None = setting(None, flag="--max-calls-per-question", rule=above(0),
                                                   help="a candidate costing more LM calls per question on "
                                                   "validation is not chosen")

    OWN: ClassVar[frozenset[str]] = frozenset({"methods"})

    def check(self) -> None:
        super().check()
        if len(self.splits) != 3 or any(not isinstance(f, (int, float)) or f <= 0 for f in self.splits) \
                or abs(sum(self.splits) - 1.0) > 1e-6:
            self.refuse("splits", f"{self.splits}: give three positive fractions that add up to 1")
        if self.method and self.methods:
            self.refuse("methods", "give method (one candidate) or methods (several), not both")
        if any(not isinstance(m, str) or not m for m in self.methods):
            self.refuse("methods", f"must be a list of method names, got {self.methods!r}")


@dataclass(frozen=True)
class ReproduceSettings(JobSettings):
    job: ClassVar[str] = "reproduce"
    table: str | None = None  # the command line's positional TABLE
    datasets: tuple[str, ...] | None = setting(None, flag="--datasets", parse=_names, help="run only these of the "
                                               "table's datasets (comma-separated)")
    methods: tuple[str, ...] | None = setting(None, flag="--methods", parse=_names, help="run only these of the "
                                              "table's methods (comma-separated)")
    out: str = setting("runs/reproduce", flag="--out", help="results root (default runs/reproduce); cells go to "
                       "<out>/<table>/")
    shard: str | None = setting(None, flag="--shard", metavar="I/N", rule=_shard, help="every cell on every N-th "
                                "question from the I-th (give each shard its own --out; hyporag merge joins them)")

    OWN: ClassVar[frozenset[str]] = frozenset({"methods"})


def check_shard(job: str, shard: str | None) -> None:
    if shard is not None:
        Shard.parse(shard, f"{job}: shard")


JOBS: dict[str, type[JobSettings]] = {s.job: s for s in (EvalSettings, CompileSettings, TuneSettings, FitSettings,
                                                         ReproduceSettings, EmbedSettings, AskSettings,
                                                         IndexBuildSettings)}
