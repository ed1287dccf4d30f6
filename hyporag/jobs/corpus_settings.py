"""The settings of the jobs that take a corpus or one question rather than a dataset's run: `embed` (passage vectors
in shards), `index build` and `ask`. Declared as every job's settings are (hyporag.jobs.settings): each field once,
with its type, rule, flag and help."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from hyporag.foundation.errors import ConfigError
from hyporag.foundation.settings import above, at_least, setting
from hyporag.jobs.job_base import JobSettings
from hyporag.retrieval.passage_split import MAX_PASSAGE_CHARS, MIN_PASSAGE_CHARS


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
