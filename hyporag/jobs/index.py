"""`hyporag.index_corpus`: build (or finish building) the index of the run's corpus, as `hyporag index build` does.

    hyporag.index_corpus(IndexBuildSettings(parts="both"), RunConfig(corpus="my_corpus.jsonl", embedder="minilm"))
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import IndexBuildSettings
from hyporag.retrieval import build_index, load_corpus
from hyporag.retrieval.embedder import DEFAULT_EMBEDDER

DEFAULT_CORPUS = "medcorp-local"


@dataclass(frozen=True)
class IndexResult:
    """Where the index is and how long this call took (seconds; a finished index opens in well under one)."""

    directory: Path
    seconds: float


def index_corpus(settings: IndexBuildSettings | None = None, run: RunConfig | None = None,
                 progress: bool = True) -> IndexResult:
    """The run's corpus (default medcorp-local) indexed in the run's index directory (default the cache's, per
    corpus); an interrupted build resumes; an index of another corpus there is refused unless `settings.force`."""
    settings, run = settings or IndexBuildSettings(), run or RunConfig()
    corpus = load_corpus(run.data.corpus or DEFAULT_CORPUS, run.data.data_dir)
    started = time.perf_counter()
    directory = build_index(corpus, Path(run.index.index_dir) if run.index.index_dir else None,
                            retriever=settings.retriever, embedder_name=run.index.embedder or DEFAULT_EMBEDDER,
                            faiss_kind=run.index.faiss, max_seq_length=settings.max_seq_length, progress=progress,
                            force=settings.force, vectors=Path(settings.vectors) if settings.vectors else None,
                            max_passage_chars=settings.max_passage_chars, bm25_engine=run.index.bm25_engine,
                            bm25_search=run.index.bm25_search or "exact")
    return IndexResult(directory, time.perf_counter() - started)
