"""`index build --vectors`: precomputed vectors in our layout or MedRAG's, put in the store's row order, checked
against the corpus (count, ids, dimension), each mismatch refused in one line naming the file."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from hyporag.cli import main
from hyporag.foundation.errors import IndexMismatchError
from hyporag.retrieval import build_index, load_corpus, open_index
from hyporag.retrieval.encoders import encoder_spec, make_encoder
from tests.conftest import PASSAGES

ENCODER = "hashing-16"


def vectors_of(ids):
    by_id = {i: (t, c) for i, t, c in PASSAGES}
    return make_encoder(encoder_spec(ENCODER)).encode_passages([by_id[i] for i in ids])


def our_layout(directory, groups):
    directory.mkdir(parents=True)
    for n, ids in enumerate(groups):
        np.save(directory / f"part{n}.npy", vectors_of(ids))
        (directory / f"part{n}.ids.json").write_text(json.dumps(ids))
    return directory


def build(tiny_corpus_dir, tmp_path, vectors, embedder=ENCODER):
    return build_index(load_corpus(str(tiny_corpus_dir)), tmp_path / "ix", retriever="dense", embedder_name=embedder,
                       vectors=vectors, progress=False, log=lambda m: None)


ALL_IDS = [p[0] for p in PASSAGES]


def test_shards_in_any_order_land_in_row_order_and_search_like_embedding(tiny_corpus_dir, tmp_path):
    shuffled = [ALL_IDS[7:] + ALL_IDS[:2], ALL_IDS[2:7]]
    directory = build(tiny_corpus_dir, tmp_path, our_layout(tmp_path / "vec", shuffled))
    np.testing.assert_allclose(np.load(directory / "dense" / "vectors.npy"), vectors_of(ALL_IDS), atol=1e-6)
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["parts"]["dense"]["vectors_from"] == str((tmp_path / "vec").resolve())
    embedded = build_index(load_corpus(str(tiny_corpus_dir)), tmp_path / "emb", retriever="dense",
                           embedder_name=ENCODER, progress=False, log=lambda m: None)
    corpus = load_corpus(str(tiny_corpus_dir))
    query = "which cells secrete insulin"
    assert [h.id for h in open_index(directory, corpus, mode="dense").search(query, 5)] == [
        h.id for h in open_index(embedded, corpus, mode="dense").search(query, 5)]


def test_medrag_layout_reads_ids_from_the_chunk_files(tiny_corpus_dir, tmp_path):
    root = tmp_path / "medrag" / "mycorpus"
    (root / "chunk").mkdir(parents=True)
    embedding = root / "index" / "org" / "Model" / "embedding"
    embedding.mkdir(parents=True)
    for stem, ids in (("a", ALL_IDS[:6]), ("b", ALL_IDS[6:])):
        rows = [{"id": i, "title": "t", "content": "c", "contents": "t. c"} for i in ids]
        (root / "chunk" / f"{stem}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        np.save(embedding / f"{stem}.npy", vectors_of(ids))
    directory = build(tiny_corpus_dir, tmp_path, embedding)
    np.testing.assert_allclose(np.load(directory / "dense" / "vectors.npy"), vectors_of(ALL_IDS), atol=1e-6)


@pytest.mark.parametrize("groups, message", [
    ([ALL_IDS[:9]], "1 of 10 passages have no vector (first: 'p10')"),
    ([ALL_IDS, ["p1"]], "'p1' has a vector twice"),
])
def test_vectors_that_do_not_cover_the_corpus_exactly_are_refused(tiny_corpus_dir, tmp_path, groups, message):
    with pytest.raises(IndexMismatchError, match=re.escape(message)):
        build(tiny_corpus_dir, tmp_path, our_layout(tmp_path / "vec", groups))


def test_shard_problems_are_one_line_naming_the_shard(tiny_corpus_dir, tmp_path):
    vec = our_layout(tmp_path / "vec", [ALL_IDS[:5], ALL_IDS[5:]])
    (vec / "part1.ids.json").write_text(json.dumps(ALL_IDS[5:] + ["zz"]))
    with pytest.raises(IndexMismatchError, match=r"part1.npy: 5 vectors but 6 ids"):
        build(tiny_corpus_dir, tmp_path, vec)
    (vec / "part1.ids.json").write_text(json.dumps(ALL_IDS[5:9] + ["zz"]))
    with pytest.raises(IndexMismatchError, match=r"part1.npy: passage id 'zz' is not in the corpus"):
        build(tiny_corpus_dir, tmp_path, vec)
    np.save(vec / "part1.npy", np.zeros((5, 8), dtype=np.float32))
    (vec / "part1.ids.json").write_text(json.dumps(ALL_IDS[5:]))
    with pytest.raises(IndexMismatchError, match=r"part1.npy: dimension 8, but earlier shards have 16"):
        build(tiny_corpus_dir, tmp_path, vec)
    (vec / "part1.ids.json").unlink()
    with pytest.raises(IndexMismatchError, match=r"part1.npy: no ids beside it"):
        build(tiny_corpus_dir, tmp_path, vec)


def test_vectors_of_another_dimension_than_the_query_encoder_are_refused_at_open(tiny_corpus_dir, tmp_path):
    directory = build(tiny_corpus_dir, tmp_path, our_layout(tmp_path / "vec", [ALL_IDS]), embedder="hashing-8")
    with pytest.raises(IndexMismatchError, match="16 dimensions but the query encoder 'hashing-8' gives 8"):
        open_index(directory, load_corpus(str(tiny_corpus_dir)), mode="dense")


def test_cli_builds_from_vectors_and_refuses_bad_ones_in_one_line(tiny_corpus_dir, tmp_path, capsys):
    vec = our_layout(tmp_path / "vec", [ALL_IDS])
    common = ["index", "build", "--corpus", str(tiny_corpus_dir), "--embedder", ENCODER, "--vectors", str(vec)]
    assert main([*common, "--index-dir", str(tmp_path / "ok")]) == 0
    assert "both" not in capsys.readouterr().err
    (vec / "part0.ids.json").write_text(json.dumps(ALL_IDS[:9]))
    assert main([*common, "--index-dir", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err.strip().splitlines()  # progress lines, then exactly one error line
    assert err[-1].startswith("hyporag: error:") and "part0.npy" in err[-1]
    assert not any(line.startswith("hyporag: error:") for line in err[:-1])
    assert main([*common, "--index-dir", str(tmp_path / "b2"), "--retriever", "bm25"]) == 2
