"""Before a build: estimated RAM, disk and time, and a build that cannot fit refused in one line naming what would."""

from __future__ import annotations

import pytest

from hyporag.foundation.errors import ConfigError
from hyporag.retrieval import build_index, load_corpus
from hyporag.retrieval import index as index_module
from hyporag.retrieval.estimate import GIB, estimate, refuse_if_too_big


def test_flat_medcpt_over_five_million_passages_is_refused_with_ivfpq_named():
    plan = estimate(5_000_000, 5_000_000 * 1_000, "both", "medcpt", "flat", precomputed=True)
    assert 14 * GIB < plan.ram_bytes < 16 * GIB  # 5M x 768 float32 in a flat index
    with pytest.raises(ConfigError) as caught:
        refuse_if_too_big(plan, available=9 * GIB)
    assert "--faiss ivfpq" in str(caught.value) and "\n" not in str(caught.value)
    compressed = estimate(5_000_000, 5_000_000 * 1_000, "both", "medcpt", "ivfpq", precomputed=True)
    assert compressed.ram_bytes < 2 * GIB
    refuse_if_too_big(compressed, available=9 * GIB)


def test_embedding_time_dominates_unless_vectors_are_precomputed():
    embedding = estimate(1_000_000, 10**9, "dense", "bge-large", "ivfpq", precomputed=False)
    given = estimate(1_000_000, 10**9, "dense", "bge-large", "ivfpq", precomputed=True)
    assert embedding.seconds > 100 * 3600 and given.seconds < 60
    assert "h for 1,000,000 passages" in embedding.describe()


def test_a_build_prints_its_estimate_and_a_too_big_one_leaves_nothing(tiny_corpus_dir, tmp_path, monkeypatch):
    logged = []
    corpus = load_corpus(str(tiny_corpus_dir))
    build_index(corpus, tmp_path / "ok", retriever="bm25", progress=False, log=logged.append)
    assert logged[0].startswith("estimated: peak RAM") and "for 10 passages" in logged[0]
    monkeypatch.setattr(index_module, "available_ram", lambda: 1024.0)
    with pytest.raises(ConfigError, match="GiB is available"):
        build_index(corpus, tmp_path / "big", retriever="both", embedder_name="hashing-16", progress=False,
                    log=lambda m: None)
    assert not (tmp_path / "big").exists()
