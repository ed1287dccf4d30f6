"""IVF-PQ trained once, three shards added apart, merged with on-disk lists: the same ids and scores as one build,
read back memory-mapped from a directory that has moved."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from hyporag.foundation.errors import ConfigError, IndexMismatchError
from hyporag.retrieval.dense import DenseIndex, build_faiss
from hyporag.retrieval.faiss_shards import add_shard, merge, part_path, shard_rows, train

faiss = pytest.importorskip("faiss")


class NoEncoder:
    dimension = 32


@pytest.fixture
def dense_dir(tmp_path):
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((6000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    directory = tmp_path / "dense"
    directory.mkdir()
    np.save(directory / "vectors.npy", vectors)
    return directory


@pytest.mark.parametrize("kind", ["ivfpq", "ivf"])
def test_merged_shards_search_as_one_build(dense_dir, tmp_path, kind):
    vectors = np.load(dense_dir / "vectors.npy")
    single_dir = tmp_path / "single"
    single_dir.mkdir()
    shutil.copy(dense_dir / "vectors.npy", single_dir / "vectors.npy")
    faiss.write_index(build_faiss(vectors, kind), str(single_dir / f"faiss-{kind}.index"))
    train(dense_dir, kind)
    for i in (3, 1, 2):  # any order, any process
        add_shard(dense_dir, kind, i, 3)
    merge(dense_dir, kind, 3)
    assert (dense_dir / f"faiss-{kind}.ivfdata").is_file()
    moved = tmp_path / "moved"
    shutil.move(dense_dir, moved)  # the lists file is found beside the index, wherever the directory is
    queries = vectors[:40] + 0.05
    single = DenseIndex.load(single_dir, NoEncoder(), kind).search_vectors(queries, 15)
    merged = DenseIndex.load(moved, NoEncoder(), kind)
    assert merged.index.ntotal == len(vectors)
    rows, scores = merged.search_vectors(queries, 15)
    assert np.array_equal(rows, single[0]) and np.allclose(scores, single[1], atol=1e-6)


def test_shards_cover_the_rows_once_and_a_missing_shard_is_named(dense_dir):
    assert [list(shard_rows(10, i, 3)) for i in (1, 2, 3)] == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    with pytest.raises(IndexMismatchError, match="not trained yet"):
        add_shard(dense_dir, "ivfpq", 1, 2)
    train(dense_dir, "ivfpq")
    add_shard(dense_dir, "ivfpq", 1, 2)
    with pytest.raises(IndexMismatchError, match="part-2-of-2 not added yet"):
        merge(dense_dir, "ivfpq", 2)
    with pytest.raises(ConfigError, match="IVF kind"):
        train(dense_dir, "flat")
    assert part_path(dense_dir, "ivfpq", 1, 2).is_file()


def test_the_three_commands_on_an_index_and_its_manifest(tiny_corpus_dir, tmp_path, capsys):
    from hyporag.cli import main
    from hyporag.retrieval import build_index, load_corpus, open_index
    from hyporag.retrieval.index import read_manifest

    corpus = load_corpus(str(tiny_corpus_dir))
    directory = build_index(corpus, tmp_path / "index", retriever="dense", embedder_name="hashing-64",
                            progress=False, log=lambda m: None)
    flat = open_index(directory, corpus=corpus, mode="dense").search("insulin beta cells", 3)
    assert main(["index", "faiss-train", "--index-dir", str(directory), "--faiss", "ivf"]) == 0
    for i in (1, 2):
        assert main(["index", "faiss-add", "--index-dir", str(directory), "--faiss", "ivf", "--shard", f"{i}/2"]) == 0
    assert main(["index", "faiss-merge", "--index-dir", str(directory), "--faiss", "ivf", "--shards", "2"]) == 0
    files = read_manifest(directory)["files"]
    assert {"dense/faiss-ivf.index", "dense/faiss-ivf.ivfdata"} <= set(files)  # the load checks both
    merged = open_index(directory, corpus=corpus, mode="dense", faiss_kind="ivf").search("insulin beta cells", 3)
    assert [h.id for h in merged] == [h.id for h in flat]
    assert main(["index", "faiss-merge", "--index-dir", str(directory), "--faiss", "ivf", "--shards", "2"]) == 2
    assert "already has a faiss ivf index" in capsys.readouterr().err
