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
from hyporag.eval.shards import Shard
from hyporag.foundation.errors import ConfigError
from hyporag.foundation.settings import Settings, above, at_least, setting
from hyporag.optimizers.teleprompter import AUTO, OPTIMIZERS
from hyporag.programs.registry import method_entry
from hyporag.retrieval.passage_split import MAX_PASSAGE_CHARS, MIN_PASSAGE_CHARS


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
                                  "run) is decided: better, worse, or equivalent within --delta, by confidence "
                                  "sequences valid however often they are read")
    delta: float | None = setting(None, flag="--delta", rule=above(0), help="accuracy difference within which two "
                                  "methods count as equivalent (default 0.05)")
    delta_lead: float | None = setting(None, flag="--delta-lead", rule=above(0), help="log p(gold) difference "
                                       "within which two methods count as equivalent (default 0.1)")
    max_questions: int | None = setting(None, flag="--max-questions", rule=at_least(1), help="with --until-decided: "
                                        "stop after this many questions, decided or not")
    assume_effect: float | None = setting(None, flag="--assume-effect", metavar="D", rule=lambda v: None if 0 < v <= 0.3
                                          else "must be an accuracy difference in (0, 0.3]", help="before the "
                                          "run, print how many questions and LM calls deciding an accuracy "
                                          "difference of D is expected to take (--until-decided assumes 0.1)")
    plan_from: str | None = setting(None, flag="--plan-from", metavar="RUN_DIR", help="before the run, print how "
                                    "many questions and LM calls each comparison is expected to take, resampling "
                                    "its paired questions in an earlier run")
    alpha: float = setting(0.05, flag="--alpha", rule=lambda v: None if 0 < v < 1 else "must be between 0 and 1",
                           help="the error budget every report's sequences share (default 0.05)")
    against: str | None = setting(None, flag="--against", metavar="RUN_DIR", help="compare each method with itself "
                                  "in an earlier run, paired by question: a regression gate")
    fail_if_worse: float | None = setting(None, flag="--fail-if-worse", metavar="D", rule=at_least(0),
                                          help="with --against: exit 1 when a method's accuracy is worse than the "
                                          "earlier run's by more than D with the error guarantee (0: worse beyond "
                                          "chance)")

    def check(self) -> None:
        super().check()
        if self.fail_if_worse is not None and not self.against:
            self.refuse("fail_if_worse", "needs --against, the run to compare with")
        if self.max_questions is not None and not self.until_decided:
            self.refuse("max_questions", "is --until-decided's budget; use --limit for a fixed number of questions")
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
                             "log-p-gold, margin (docs/results/margin.md), or pull (passages pulling toward the "
                             "correct option; needs --answer per-passage)")


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
                             "maximises: accuracy (default; log p of the correct option breaks ties), log-p-gold, "
                             "margin, or pull (needs --answer per-passage)")
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


@dataclass(frozen=True)
class EmbedSettings(JobSettings):
    """`hyporag embed`: passage vectors of a corpus in shards, on this machine or a Ray cluster (`ray` = address).
    The corpus, encoder (`embedder`) and torch threads are the RunConfig's, as for `index build`."""

    job: ClassVar[str] = "embed"
    out: str | None = setting(None, flag="--out", help="the vectors folder (re-running the same command resumes it)")
    ray: str | None = setting(None, flag="--ray", metavar="ADDRESS", help="run on a Ray cluster: auto, host:6379 or "
                              "ray://host:10001 (needs pip install 'hyporag[ray]' on every node)")
    concurrency: int = setting(2, flag="--concurrency", rule=at_least(1), help="Ray actors, each with its own encoder "
                               "(default 2)")
    cpus_per_actor: float = setting(1.0, flag="--cpus-per-actor", rule=above(0), help="CPUs each Ray actor reserves "
                                    "(default 1)")
    gpus_per_actor: float = setting(0.0, flag="--gpus-per-actor", rule=at_least(0), help="GPUs each Ray actor "
                                    "reserves (default 0; 1 on GPU nodes)")
    processes: int = setting(1, flag="--processes", rule=at_least(1), help="without --ray: sentence-transformers "
                             "processes on this machine (one per GPU, or CPU processes; default 1)")
    shard_size: int = setting(10_000, flag="--shard-size", rule=at_least(1), help="passages a shard, the unit of "
                              "resuming (default 10000)")
    batch_size: int = setting(64, flag="--batch-size", rule=at_least(1), help="passages an encoder call (default 64)")
    window: int = setting(100_000, flag="--window", rule=at_least(1), help="passages handed to Ray at a time "
                          "(default 100000)")
    max_seq_length: int | None = setting(None, flag="--max-seq-length", rule=at_least(1), help="truncate passages "
                                         "for the encoder (MiniLM default 256)")
    max_passage_chars: int = setting(MAX_PASSAGE_CHARS, flag="--max-passage-chars", rule=at_least(MIN_PASSAGE_CHARS),
                                     help=f"split longer passages as index build does (default {MAX_PASSAGE_CHARS}; "
                                     "give index build the same)")

    def check(self) -> None:
        super().check()
        if self.ray and self.processes > 1:
            self.refuse("processes", "is for this machine; on Ray give concurrency (actors) instead")


def parse_options(items: list[str] | dict) -> dict[str, str]:
    """`--option A=Liver --option B=Pancreas` (or a table from Python or the project file) as {letter: text}: one
    letter each, never one kept and one dropped, at least two."""
    pairs = list(items.items()) if isinstance(items, dict) else [tuple(i.partition("=")[::2]) for i in items]
    raw = [f"{k}={v}" for k, v in pairs] if isinstance(items, dict) else list(items)
    options: dict[str, str] = {}
    given: dict[str, str] = {}
    for (letter, text), item in zip(pairs, raw, strict=True):
        letter, text = str(letter).strip(), str(text).strip()
        if len(letter) != 1 or not letter.isalpha() or not text or "=" not in item:
            raise ConfigError(f"--option {item!r}: expected LETTER=TEXT, e.g. --option A=Liver")
        key = letter.upper()
        if key in options:  # the dropped one may be the right answer
            raise ConfigError(f"--option {item!r}: letter {key} was already given ({given[key]!r}); each option "
                              "needs its own letter")
        options[key], given[key] = text, item
    if len(options) < 2:
        raise ConfigError("--option: give at least two options")
    return dict(sorted(options.items()))


@dataclass(frozen=True)
class AskSettings(JobSettings):
    """`hyporag ask`: one question and its options through one method (or the run's frozen `--program`)."""

    job: ClassVar[str] = "ask"
    question: str | None = setting(None, flag="--question", help="the question")
    options: dict[str, str] = setting(flag="--option", default_factory=dict, action="append", metavar="LETTER=TEXT",
                                      parse=parse_options, help="an option, LETTER=TEXT (repeat for each)")
    method: str | None = setting(None, flag="--method", help="default rag (or the --program's own)")
    json_output: bool = setting(False, flag="--json", help="print the full prediction as JSON")

    def check(self) -> None:
        super().check()
        if self.question is not None and not self.question.strip():
            self.refuse("question", "the question is empty")
        if self.options:
            parse_options(self.options)  # a table given from Python is checked as the flags are

    def ready(self) -> None:
        """What `ask` needs once every source of settings has been read: a question and its options."""
        if self.question is None:
            self.refuse("question", "give the question")
        if not self.options:
            self.refuse("options", "give the options (--option A=... --option B=...)")


INDEX_PARTS = ("bm25", "dense", "both")


@dataclass(frozen=True)
class IndexBuildSettings(JobSettings):
    """`hyporag index build`: which parts to build and how passages enter the index. The corpus, index directory,
    encoder (`embedder`), FAISS kind and BM25 engine and search are the RunConfig's, as every job reads them."""

    job: ClassVar[str] = "index"
    parts: str | None = setting(None, flag="--retriever", choices=INDEX_PARTS, help="the parts to build: bm25 "
                                "(default), dense or both (both with --vectors)")
    max_seq_length: int | None = setting(None, flag="--max-seq-length", rule=at_least(1), help="truncate passages "
                                         "for the embedder (MiniLM default 256)")
    max_passage_chars: int = setting(MAX_PASSAGE_CHARS, flag="--max-passage-chars", rule=at_least(MIN_PASSAGE_CHARS),
                                     help=f"split longer passages at whitespace into <id>#n (default "
                                     f"{MAX_PASSAGE_CHARS}, at least {MIN_PASSAGE_CHARS})")
    vectors: str | None = setting(None, flag="--vectors", help="precomputed passage vectors (a folder of .npy "
                                  "shards with their ids, or MedRAG's index/<encoder>/embedding folder) to use instead "
                                  "of embedding; give the --embedder that made them")
    force: bool = setting(False, flag="--force", help="replace an index of another corpus in --index-dir, or a "
                          "BM25 part another engine built")

    @property
    def retriever(self) -> str:
        return self.parts or ("both" if self.vectors else "bm25")

    def check(self) -> None:
        super().check()
        if self.vectors and self.parts == "bm25":
            self.refuse("parts", "--vectors are dense vectors; use --retriever dense or both")


def check_shard(job: str, shard: str | None) -> None:
    if shard is not None:
        Shard.parse(shard, f"{job}: shard")


JOBS: dict[str, type[JobSettings]] = {s.job: s for s in (EvalSettings, CompileSettings, TuneSettings, FitSettings,
                                                         ReproduceSettings, EmbedSettings, AskSettings,
                                                         IndexBuildSettings)}
