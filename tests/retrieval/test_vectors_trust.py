"""Vectors `hyporag embed` made, as `index build --vectors` must trust them: only for the corpus contents, the
passage split and the encoder they were made with; a shard a kill cut short is one line and is redone by embed; a
refused build leaves no half-built index behind."""

from __future__ import annotations

import json

import pytest

from hyporag.cli import main
from hyporag.foundation.errors import IndexMismatchError
from hyporag.jobs.embed import embed
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import EmbedSettings
from hyporag.retrieval import build_index, load_corpus
from tests.conftest import PASSAGES, write_jsonl


@pytest.fixture
def made(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus" / "p.jsonl", [{"id": i, "title": t, "contents": c}
                                                            for i, t, c in PASSAGES])
    settings = EmbedSettings(out=str(tmp_path / "vec"), shard_size=4)
    embed(settings, RunConfig(corpus=str(corpus.parent), embedder="hashing-64"), progress=False)
    return corpus, tmp_path / "vec"


def build(corpus, vectors, directory, embedder="hashing-64"):
    return build_index(load_corpus(str(corpus.parent)), directory, retriever="dense", embedder_name=embedder,
                       progress=False, log=lambda m: None, vectors=vectors)


def test_vectors_of_another_corpus_version_are_refused(made, tmp_path):
    corpus, vectors = made
    rows = [json.loads(line) for line in corpus.read_text().splitlines()]
    rows[3]["contents"] = "The kidney now says something else entirely."  # edited after embed
    write_jsonl(corpus, rows)
    with pytest.raises(IndexMismatchError, match="another version of the corpus"):
        build(corpus, vectors, tmp_path / "index")
    assert not (tmp_path / "index").exists()  # nothing half-built


def test_vectors_of_another_encoder_of_the_same_dimension_are_refused(made, tmp_path):
    corpus, vectors = made
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"name": "other-64", "query_model": "hashing-64", "backend": "hashing"}))
    with pytest.raises(IndexMismatchError, match=r"made by encoder 'hashing-64'.* encodes queries with 'other-64'"):
        build(corpus, vectors, tmp_path / "index", embedder=str(other))
    build(corpus, vectors, tmp_path / "index")  # the encoder that made them: accepted


def test_a_truncated_shard_is_one_line_and_embed_redoes_it(made, tmp_path, capsys):
    corpus, vectors = made
    shard = vectors / "shard-00001.npy"
    shard.write_bytes(shard.read_bytes()[:200])  # a kill mid-write of a tool that did not rename into place
    assert main(["index", "build", "--corpus", str(corpus.parent), "--retriever", "dense", "--embedder",
                 "hashing-64", "--vectors", str(vectors), "--index-dir", str(tmp_path / "index")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "shard-00001.npy: not a complete .npy file" in err[-1]
    assert not (tmp_path / "index").exists()
    report = embed(EmbedSettings(out=str(vectors), shard_size=4),
                   RunConfig(corpus=str(corpus.parent), embedder="hashing-64"), progress=False)
    assert report.shards_encoded == 1  # only the cut shard
    build(corpus, vectors, tmp_path / "index")
