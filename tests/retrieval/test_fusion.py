"""Several retrievers fused by RRF (MedRAG fuses four): other indexes of the same corpus, each with its own
encoder, join hybrid search; an index of another corpus is refused in one line."""

from __future__ import annotations

import pytest

from hyporag.foundation.errors import ConfigError
from hyporag.jobs.builders import build_retriever
from hyporag.jobs.run_config import RunConfig
from hyporag.retrieval import build_index, load_corpus, open_index
from hyporag.retrieval.query import WeightedQuery
from tests.conftest import PASSAGES, write_jsonl


def contrast(retriever, plus: str, minus: str, lam: float, k: int, mode: str | None = None):
    """sim(d, plus) − λ·sim(d, minus): one weighted query."""
    return retriever.search_weighted([WeightedQuery.difference(plus, minus, lam)], k, mode=mode)[0]


def rrf(lists, k, rrf_k):
    fused = {}
    for ranked in lists:
        for rank, pid in enumerate(ranked, start=1):
            fused[pid] = fused.get(pid, 0.0) + 1.0 / (rrf_k + rank)
    row = {pid: i for i, (pid, _, _) in enumerate(PASSAGES)}  # ties go to the lower store row, as in the retriever
    return [pid for pid, _ in sorted(fused.items(), key=lambda item: (-item[1], row[item[0]]))[:k]]


@pytest.fixture
def indexes(tiny_corpus_dir, tmp_path):
    corpus = load_corpus(str(tiny_corpus_dir))
    main = build_index(corpus, tmp_path / "main", retriever="both", embedder_name="hashing-16", progress=False,
                       log=lambda m: None)
    other = build_index(corpus, tmp_path / "other", retriever="dense", embedder_name="hashing-64", progress=False,
                        log=lambda m: None)
    return corpus, main, other


def test_hybrid_search_fuses_every_retriever_by_rrf(indexes):
    corpus, main, other = indexes
    retriever = open_index(main, corpus, mode="hybrid", rrf_k=100)
    extra = open_index(other, corpus, mode="dense")
    retriever.fuse_with([extra])
    query = "which cells secrete insulin"
    depth = retriever.candidate_depth
    lists = [[h.id for h in retriever.search(query, depth, mode="bm25")],
             [h.id for h in retriever.search(query, depth, mode="dense")],
             [h.id for h in extra.search(query, depth, mode="dense")]]
    assert [h.id for h in retriever.search(query, 5)] == rrf(lists, 5, 100)
    assert len(contrast(retriever, "beta cells insulin", "alpha cells glucagon", 1.0, 5)) == 5
    assert len(retriever.search_weighted([WeightedQuery.mean(["insulin", "beta cells"])], 5)[0]) == 5


def test_the_run_setting_fuses_and_another_corpus_is_refused(indexes, tmp_path):
    corpus, main, other = indexes
    config = RunConfig(corpus=corpus.spec, index_dir=str(main), retriever="hybrid", fuse_index=[str(other)])
    assert len(build_retriever(config, True).extra_dense) == 1
    elsewhere = write_jsonl(tmp_path / "else" / "c.jsonl",
                            [{"id": i, "title": t, "contents": c} for i, t, c in PASSAGES[:4]])
    foreign = build_index(load_corpus(str(elsewhere)), tmp_path / "foreign", retriever="dense",
                          embedder_name="hashing-16", progress=False, log=lambda m: None)
    retriever = open_index(main, corpus, mode="hybrid")
    with pytest.raises(ConfigError, match="not an index of this corpus") as caught:
        retriever.fuse_with([open_index(foreign, mode="dense")])
    assert "\n" not in str(caught.value)
