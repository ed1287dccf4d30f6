"""`hyporag embed` on this machine: shards in corpus order equal to one encoding of the whole corpus, a killed run
resumed shard by shard, a folder of other settings refused, and the output taken by `index build --vectors`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hyporag.foundation.errors import ConfigError, IndexMismatchError
from hyporag.jobs.embed import embed
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import EmbedSettings
from hyporag.retrieval import build_index, load_corpus, open_index
from hyporag.retrieval.encoders import encoder_spec, make_encoder
from hyporag.retrieval.passage_split import SplitReport, split_long_passages
from hyporag.retrieval.vector_shards import VectorShards
from tests.tiny_bert import WORDS, tiny_bert


def write_corpus(directory, count: int) -> None:
    directory.mkdir(parents=True)
    rng = np.random.default_rng(0)
    with (directory / "p.jsonl").open("w") as handle:
        for i in range(count):
            words = " ".join(rng.choice(WORDS[3:], size=int(rng.integers(3, 30))))
            handle.write(json.dumps({"id": f"p{i}", "title": WORDS[3 + i % 10], "contents": words}) + "\n")
        # one passage longer than the split limit: its parts' ids must be those index build stores
        handle.write(json.dumps({"id": "long", "title": "t", "contents": "insulin beta cells " * 30}) + "\n")


@pytest.fixture
def tiny(tmp_path):
    corpus_dir = tmp_path / "corpus"
    write_corpus(corpus_dir, 58)
    spec_file = tmp_path / "tiny-bert.json"
    spec_file.write_text(json.dumps({"name": "tiny-bert", "query_model": tiny_bert(tmp_path / "bert", 0),
                                     "pooling": "mean", "query_max_length": 48, "passage_max_length": 48}))
    return corpus_dir, str(spec_file)


def whole(corpus_dir, spec_file, max_chars: int):
    passages = list(split_long_passages(load_corpus(str(corpus_dir)), SplitReport(max_chars)))
    vectors = make_encoder(encoder_spec(spec_file)).encode_passages([(p.title, p.contents) for p in passages], 7)
    return vectors, [p.id for p in passages]


def test_shards_equal_one_encoding_in_corpus_order_and_resume(tiny, tmp_path):
    corpus_dir, spec_file = tiny
    run = RunConfig(corpus=str(corpus_dir), embedder=spec_file)
    settings = EmbedSettings(out=str(tmp_path / "vec"), shard_size=10, batch_size=4, max_passage_chars=400)
    report = embed(settings, run, progress=False)
    expected, ids = whole(corpus_dir, spec_file, 400)
    assert "long#2" in ids and report.passages == len(ids) == 60
    assert (report.shards, report.shards_encoded) == (6, 6)
    vectors, got_ids = VectorShards(settings.out, {"shard_size": 10}).read_all()
    assert got_ids == ids
    np.testing.assert_allclose(vectors, expected, atol=1e-5)

    # a kill after shard 3 was renamed into place but before shard 4: those two redone, the rest skipped
    (tmp_path / "vec" / "shard-00003.npy").unlink()
    (tmp_path / "vec" / "shard-00004.ids.json").unlink()
    again = embed(settings, run, progress=False)
    assert (again.shards_encoded, again.passages_encoded) == (2, 20)
    np.testing.assert_allclose(VectorShards(settings.out, {"shard_size": 10}).read_all()[0], expected, atol=1e-5)
    assert json.loads((tmp_path / "vec" / "embed-report.json").read_text())["shards_encoded"] == 2

    # the vectors build an index of the same corpus, with its passages split the same way
    index = build_index(load_corpus(str(corpus_dir)), tmp_path / "ix", retriever="dense", embedder_name=spec_file,
                        progress=False, log=lambda m: None, vectors=tmp_path / "vec", max_passage_chars=400)
    hits = open_index(index, mode="dense").search("insulin beta cells", 3)
    assert len(hits) == 3


def test_other_settings_are_refused_not_mixed(tiny, tmp_path):
    corpus_dir, spec_file = tiny
    out = str(tmp_path / "vec")
    embed(EmbedSettings(out=out, shard_size=20), RunConfig(corpus=str(corpus_dir), embedder="hashing-16"),
          progress=False)
    for settings, run in ((EmbedSettings(out=out, shard_size=20), RunConfig(corpus=str(corpus_dir),
                                                                           embedder=spec_file)),
                          (EmbedSettings(out=out, shard_size=30), RunConfig(corpus=str(corpus_dir),
                                                                           embedder="hashing-16"))):
        with pytest.raises(IndexMismatchError) as caught:
            embed(settings, run, progress=False)
        assert "other settings" in str(caught.value) and "\n" not in str(caught.value)
    stray = tmp_path / "stray"
    stray.mkdir()
    np.save(stray / "mine.npy", np.zeros(3))
    with pytest.raises(IndexMismatchError, match="did not write"):
        embed(EmbedSettings(out=str(stray)), RunConfig(corpus=str(corpus_dir), embedder="hashing-16"),
              progress=False)
    with pytest.raises(ConfigError, match="sentence-transformers encoder"):
        embed(EmbedSettings(out=str(tmp_path / "v2"), processes=2), RunConfig(corpus=str(corpus_dir),
                                                                            embedder="hashing-16"), progress=False)
    with pytest.raises(ConfigError, match="shard_size"):
        EmbedSettings(out=out, shard_size=0)


def test_cli_embeds_and_names_the_next_step(tiny, tmp_path, capsys):
    from hyporag.cli import main

    corpus_dir, _ = tiny
    out = tmp_path / "vec"
    assert main(["embed", "--corpus", str(corpus_dir), "--embedder", "hashing-16", "--out", str(out),
                 "--shard-size", "25"]) == 0
    printed = capsys.readouterr().out
    assert "3 shards" in printed and f"--vectors {out}" in printed
    assert sorted(p.name for p in out.glob("*.npy")) == ["shard-00000.npy", "shard-00001.npy", "shard-00002.npy"]
