"""A run's shared settings in the groups a reader looks for them in: the questions and corpus (data), the index and
how it is searched (index), the LMs and how they are called (lms), how the run executes (control) and where it is
logged (tracking). Each field declares its type, allowed values, rule, flag and help once (hyporag.foundation.
settings); the command line's flags are made from them."""

from __future__ import annotations

import typing
from dataclasses import dataclass

from hyporag.foundation.settings import Settings, at_least, base_type, setting
from hyporag.lm.client import ADAPTERS
from hyporag.retrieval.bm25 import SEARCHES as BM25_SEARCHES
from hyporag.retrieval.bm25_engines import CHOICES as BM25_CHOICES
from hyporag.retrieval.dense import FAISS_KINDS
from hyporag.retrieval.retriever import MODES


@dataclass(frozen=True)
class SettingsGroup(Settings):
    """One group of the run's settings."""

    OWNER = ""  # errors from Python name the group's class: `RunControl.threads`


@dataclass(frozen=True)
class DataSettings(SettingsGroup):
    """Which questions and which corpus."""

    data_dir: str | None = setting(None, flag="--data-dir", help="local data root (default: $HYPORAG_DATA_DIR, "
                                   "then ../shared/data)")
    dataset: str | None = setting(None, flag="--dataset", help="benchmark name or a .jsonl/.csv path")
    corpus: str | None = setting(None, flag="--corpus", help="corpus name or JSONL path/dir (default: a "
                                 "--program's own corpus, else medcorp-local)")
    limit: int | None = setting(None, flag="--limit", help="first N questions after a seeded shuffle",
                                rule=lambda v: None if v >= 1 else f"must be 1 or more, got {v}; omit it to run every "
                                "question")
    seed: int = setting(0, flag="--seed", help="shuffle and split seed (default 0)")
    skip_bad_rows: bool = setting(False, flag="--skip-bad-rows", help="skip (and count) bad rows and over-long "
                                  "questions instead of stopping")


@dataclass(frozen=True)
class IndexSettings(SettingsGroup):
    """The index and how it is searched."""

    index_dir: str | None = setting(None, flag="--index-dir", help="index directory (default: the cache's "
                                    "indexes/<corpus>-<source hash>)")
    retriever: str | None = setting(None, flag="--retriever", choices=MODES, help="default: whatever the index "
                                    "holds")
    faiss: str = setting("flat", flag="--faiss", choices=FAISS_KINDS, help="FAISS index kind for dense search "
                         "(default flat)")
    nprobe: int | None = setting(None, flag="--nprobe", rule=at_least(1), help="IVF indexes: lists searched per "
                                 "query (default lists / 16, at most 128; more = closer to exact search, slower)")
    embedder: str | None = setting(None, flag="--embedder", help="check that the index's vectors were made by this "
                                   "encoder (queries always use the index's own query side; another is refused)")
    bm25_engine: str = setting("auto", flag="--bm25-engine", choices=BM25_CHOICES, help="check that the index's BM25 "
                               "part was built by this engine (bm25s or tantivy; another is refused)")
    bm25_search: str | None = setting(None, flag="--bm25-search", choices=BM25_SEARCHES, help="exact (default: every "
                                      "passage scored) or two-stage (rare terms over every passage, the best 1,000 "
                                      "rescored exactly; needs an index built with --bm25-search two-stage; "
                                      "docs/results/scale.md has its overlap and speed)")
    rrf_k: int = setting(60, flag="--rrf-k", rule=at_least(1), help="reciprocal-rank-fusion constant for hybrid "
                         "retrieval (default 60; MedRAG fuses with 100)")
    fuse_index: list[str] = setting(flag="--fuse-index", default_factory=list, action="append", metavar="DIR",
                                    help="another index of the same corpus whose dense side (another encoder) hybrid "
                                    "search fuses in by RRF (repeatable)")


@dataclass(frozen=True)
class LMSettings(SettingsGroup):
    """The LMs of each role, their endpoints and how they are called."""

    lm: str = setting("local:qwen2.5-coder-1.5b", flag="--lm", help="every role (default local:qwen2.5-coder-1.5b)")
    hypothesis_lm: str | None = setting(None, flag="--hypothesis-lm", help="hypotheses, rewrites, pseudo-documents, "
                                        "reranking")
    answer_lm: str | None = setting(None, flag="--answer-lm", help="the answer step")
    judge_lm: str | None = setting(None, flag="--judge-lm", help="the DUR judge")
    api_base: str | None = None  # one endpoint from Python (the command line's --api-base fills api_bases)
    api_bases: list[str] = setting(flag="--api-base", default_factory=list, action="append", metavar="URL",
                                   help="OpenAI-compatible server URL (vLLM, Ollama, llama.cpp, ...); repeat it for "
                                   "several servers of one model: calls go to the least busy, a dead one is skipped "
                                   "as the run goes on")
    hypothesis_api_bases: list[str] = setting(flag="--hypothesis-api-base", default_factory=list, action="append",
                                              metavar="URL", help="the hypothesis role's own server(s) (repeatable; "
                                              "default --api-base)")
    answer_api_bases: list[str] = setting(flag="--answer-api-base", default_factory=list, action="append",
                                          metavar="URL", help="the answer role's own server(s) (repeatable; default "
                                          "--api-base)")
    judge_api_bases: list[str] = setting(flag="--judge-api-base", default_factory=list, action="append",
                                         metavar="URL", help="the judge role's own server(s) (repeatable; default "
                                         "--api-base)")
    api_key: str | None = setting(None, flag="--api-key", help="API key (default: the provider's environment "
                                  "variable)")
    max_tokens: int = setting(512, flag="--max-tokens", rule=at_least(1), help="reply tokens per call, reserved in "
                              "the context (default 512)")
    timeout: float | None = setting(None, flag="--timeout", rule=lambda v: None if v > 0 else "must be above 0",
                                    help="seconds to wait for each remote LM reply (default 120; 600 for a server on "
                                    "127.0.0.1, where a CPU model's reply can take minutes)")
    retries: int = setting(3, flag="--retries", rule=at_least(0), help="retries with backoff for a remote LM "
                           "(DSPy's; default 3)")
    no_cache: bool = setting(False, flag="--no-cache", help="bypass DSPy's disk cache of LM calls")
    adapter: str = setting("auto", flag="--adapter", choices=ADAPTERS, help="DSPy adapter: auto (default) = lean for "
                           "local models under --protocol fast, JSON for local ones under paper and for --api-base "
                           "servers, else Chat")
    context_tokens: int | None = setting(None, flag="--context-tokens", rule=at_least(1), help="the answer LM's "
                                         "context window (default: n_ctx for local models, the server's or DSPy's "
                                         "model metadata for remote ones; unknown = not checked)")
    speculative: str = setting("none", flag="--speculative", metavar="MODE", help="speculative decoding in the "
                               "embedded engine: none (default), ngram, ngram-mod, draft[:MODEL] (default draft "
                               "qwen2.5-coder-0.5b); a mode whose replies were measured to differ from plain decoding "
                               "is refused (all three today: docs/results/speed.md)")

    def endpoints(self, role: str | None = None) -> list[str]:
        """The endpoints serving `role` (or every role): its own, else `api_bases`, else `api_base`; none: the
        model string's own provider, or the embedded model."""
        own = getattr(self, f"{role}_api_bases") if role else []
        return list(own or self.api_bases or ([self.api_base] if self.api_base else []))


@dataclass(frozen=True)
class RunControl(SettingsGroup):
    """How the run executes and what it reports against."""

    program: str | None = setting(None, flag="--program", help="a frozen artifact directory to run instead of the "
                                  "methods (implies its method and brings its own settings, corpus and index)")
    threads: int = setting(1, flag="--threads", rule=at_least(1), help="questions answered at once (default 1; "
                           "against servers, at least one per server; the embedded model on 2 cores gains nothing "
                           "from more)")
    out: str | None = setting(None, flag="--out", help="the directory to write (results, artifact or fit)")
    dur: bool = setting(False, flag="--dur", help="judge each context (Entailed/Useful/NotUseful) with --judge-lm")
    baseline: str = setting("rag", flag="--baseline", help="the method every other is tested against in the reports "
                            "(default rag); lift is always over cot, the same reader without retrieval")
    debug: bool = False


@dataclass(frozen=True)
class TrackingSettings(SettingsGroup):
    """Where the run is logged."""

    track: str | None = setting(None, flag="--track", metavar="URI", help="log this job as an MLflow run at URI "
                                "(http://host:5000, sqlite:///mlflow.db, a folder); needs pip install "
                                "'hyporag[mlflow]'")


GROUPS: dict[str, type[SettingsGroup]] = {"data": DataSettings, "index": IndexSettings, "lms": LMSettings,
                                          "control": RunControl, "tracking": TrackingSettings}
GROUP_OF: dict[str, str] = {name: group for group, cls in GROUPS.items() for name in cls.field_names()}


def field_types() -> dict[str, type]:
    """The base type of every run setting (int for `int | None`)."""
    return {name: base_type(hint) for cls in GROUPS.values() for name, hint in typing.get_type_hints(cls).items()}
