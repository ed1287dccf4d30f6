"""An index that is half built, hostile or fed over-long passages: resumed, refused in one line, or split, and
never a traceback; a library caller's stdout stays clean."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hyporag.cli import main
from hyporag.foundation.errors import ConfigError, IndexMismatchError
from hyporag.retrieval import build_index, load_corpus, open_index
from hyporag.retrieval.bm25 import BM25Index
from hyporag.retrieval.index import _save, read_manifest
from tests.conftest import PASSAGES, QUESTIONS, write_jsonl


def ask_argv(server, corpus):
    return ["ask", "--method", "rag", "--corpus", str(corpus), "--question", QUESTIONS[0]["question"],
            "--option", "A=Alpha cells", "--option", "B=Beta cells", "--lm", "openai/m", "--api-key", "k",
            "--api-base", f"http://127.0.0.1:{server.server_port}/v1", "--no-cache"]


def test_an_interrupted_first_use_build_is_resumed_by_the_command_that_started_it(server, tiny_corpus_dir,
                                                                                    monkeypatch, capsys):
    real = BM25Index.build_in_chunks

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(BM25Index, "build_in_chunks", staticmethod(interrupted))
    assert main(ask_argv(server, tiny_corpus_dir)) == 130  # killed during "building a BM25 index ... first"
    monkeypatch.setattr(BM25Index, "build_in_chunks", real)
    capsys.readouterr()
    assert main(ask_argv(server, tiny_corpus_dir)) == 0
    assert "no finished index at" in capsys.readouterr().err and server.requests == 1


def test_opening_a_half_built_index_names_the_directory_and_the_command(tiny_corpus_dir, tmp_path, monkeypatch):
    corpus = load_corpus(str(tiny_corpus_dir))
    monkeypatch.setattr(BM25Index, "build_in_chunks", staticmethod(lambda *a, **k: (_ for _ in ()).throw(
        KeyboardInterrupt)))
    with pytest.raises(KeyboardInterrupt):
        build_index(corpus, tmp_path / "ix", retriever="bm25", progress=False, log=lambda m: None)
    with pytest.raises(IndexMismatchError, match=f"{tmp_path / 'ix'}: .*hyporag index build --corpus .* "
                                                 f"--index-dir {tmp_path / 'ix'}"):
        open_index(tmp_path / "ix", corpus=corpus)


@pytest.mark.parametrize(("target", "engine"), [("dense/faiss-flat.index", "bm25s"), ("bm25", "bm25s"),
                                                ("bm25", "tantivy")])
def test_a_hostile_index_file_whose_manifest_matches_is_one_line(tiny_corpus_dir, tmp_path, target, engine):
    corpus = load_corpus(str(tiny_corpus_dir))
    directory = build_index(corpus, tmp_path / "ix", retriever="both", embedder_name="hashing-16", progress=False,
                            log=lambda m: None, bm25_engine=engine)
    path = directory / target
    for victim in ([path] if path.is_file() else sorted(p for p in path.iterdir() if p.suffix in (".npy", ".json"))):
        victim.write_bytes(b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (99, 99), }"
                           if victim.suffix == ".npy" else b"not an index")
    manifest = read_manifest(directory)
    _save(directory, manifest)  # a hostile author's checksums agree with the files
    (directory / ".verified.json").unlink(missing_ok=True)
    with pytest.raises(IndexMismatchError, match="an index file cannot be opened") as caught:
        open_index(directory, corpus=corpus)
    assert "\n" not in str(caught.value)


def test_build_index_without_progress_writes_nothing_to_stdout(tiny_corpus_dir, tmp_path, capsys):
    build_index(load_corpus(str(tiny_corpus_dir)), tmp_path / "ix", retriever="bm25", progress=False)
    captured = capsys.readouterr()
    assert captured.out == "" and "passage store" in captured.err


def test_over_long_passages_are_split_at_build_time_and_retrievable(tmp_path):
    long_text = " ".join(f"word{i}" for i in range(900)) + " glucagonoma necrolytic migratory erythema"
    records = [{"id": i, "title": t, "contents": c} for i, t, c in PASSAGES] + [
        {"id": "long", "title": "Long chapter", "contents": long_text}]
    corpus = load_corpus(str(write_jsonl(tmp_path / "c" / "a.jsonl", records)))
    directory = build_index(corpus, tmp_path / "ix", retriever="bm25", progress=False, log=lambda m: None,
                            max_passage_chars=1000)
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["split_passages"] == 1 and manifest["split_parts"] >= 6 and manifest["max_passage_chars"] == 1000
    retriever = open_index(directory, corpus=corpus, mode="bm25")
    assert max(len(p.contents) for p in retriever.store.longest(3)) <= 1000
    hits = retriever.search("necrolytic migratory erythema", k=1)
    assert hits[0].id.startswith("long#") and "necrolytic" in hits[0].contents
    assert np.isfinite(hits[0].score)


def test_an_index_whose_bm25_another_engine_built_is_refused_in_one_line(tiny_corpus_dir, tmp_path):
    corpus = load_corpus(str(tiny_corpus_dir))
    directory = build_index(corpus, tmp_path / "ix", retriever="bm25", progress=False, log=lambda m: None)
    manifest = read_manifest(directory)
    assert manifest["parts"]["bm25"]["engine"] == "bm25s"
    manifest["parts"]["bm25"]["engine"] = "lucene"
    _save(directory, manifest)
    with pytest.raises(IndexMismatchError) as caught:
        open_index(directory, corpus=corpus)
    assert "\n" not in str(caught.value) and "'lucene' engine" in str(caught.value) and "--force" in str(caught.value)
    del manifest["parts"]["bm25"]["engine"]  # an index from before the field: bm25s's, opened as before
    _save(directory, manifest)
    assert open_index(directory, corpus=corpus).bm25 is not None


@pytest.mark.parametrize(("value", "said"), [("-5", "--max-passage-chars: must be 64 or more, got -5"),
                                             ("0", "--max-passage-chars: must be 64 or more, got 0")])
def test_a_passage_bound_below_its_minimum_is_refused_not_looped_on_or_replaced(tiny_corpus_dir, tmp_path, value,
                                                                                said, capsys):
    """-5 used to split forever and 0 silently became 1800: the flag now goes through the settings' checker."""
    from hyporag.cli import main

    code = main(["index", "build", "--corpus", str(tiny_corpus_dir), "--index-dir", str(tmp_path / "i"),
                 "--max-passage-chars", value])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.endswith(said) and err.count("\n") == 0 and not (tmp_path / "i").exists()
    with pytest.raises(ConfigError, match="max_passage_chars must be a whole number of at least 64"):
        build_index(load_corpus(str(tiny_corpus_dir)), tmp_path / "j", retriever="bm25", max_passage_chars=-5)


def test_index_build_and_ask_are_calls_with_typed_settings(tiny_corpus_dir, tmp_path):
    """What `index build` and `ask` do, a notebook does with the same settings and no argparse."""
    import hyporag
    from hyporag import AskSettings, IndexBuildSettings, RunConfig
    from hyporag.testing import dummy_roles

    run = RunConfig(corpus=str(tiny_corpus_dir), index_dir=str(tmp_path / "i"), budget=2)
    built = hyporag.index_corpus(IndexBuildSettings(max_passage_chars=200), run, progress=False)
    assert built.directory == tmp_path / "i" and (built.directory / "manifest.json").is_file()
    asked = hyporag.ask(AskSettings(question="Which cells secrete insulin?", options={"A": "Alpha", "B": "Beta"}),
                        run, roles=dummy_roles([{"answer": "B"}]))
    assert asked.prediction.answer == "B" and asked.method == "rag" and len(asked.prediction.passages) == 2
    with pytest.raises(ConfigError, match=r"letter B was already given"):
        AskSettings(question="q", options={"A": "x", "B": "y", "b": "z"})
    with pytest.raises(ConfigError, match=r"ask.options: give the options"):
        hyporag.ask(AskSettings(question="q"), run)
