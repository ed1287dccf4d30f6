"""An index belongs to one corpus: default directories per corpus source, no silent replacement, working hints."""

from __future__ import annotations

import json

import pytest

from hyporag.cli import main
from hyporag.foundation.errors import DataError, IndexMismatchError
from hyporag.retrieval import build_index, default_index_dir, load_corpus, open_index
from tests.conftest import PASSAGES, write_jsonl


def notes(directory, count: int):
    return write_jsonl(directory / "notes.jsonl",
                       [{"id": f"{directory.name}-{i}", "title": t, "contents": c}
                        for i, (_, t, c) in enumerate((PASSAGES * 5)[:count])])


def test_two_corpora_with_one_file_stem_get_two_default_indexes(tmp_path, capsys):
    first, second = notes(tmp_path / "a", 40), notes(tmp_path / "b", 5)
    assert main(["index", "build", "--corpus", str(first), "--retriever", "both"]) == 0
    assert main(["index", "build", "--corpus", str(second)]) == 0
    dir_a, dir_b = default_index_dir(load_corpus(str(first))), default_index_dir(load_corpus(str(second)))
    assert dir_a != dir_b and dir_a.name.startswith("notes-") and dir_b.name.startswith("notes-")
    manifest_a = json.loads((dir_a / "manifest.json").read_text())
    assert manifest_a["passage_count"] == 40 and "dense" in manifest_a["parts"]  # untouched by the second build


def test_building_over_an_index_of_another_corpus_is_refused_unless_forced(tmp_path, capsys):
    first, second = notes(tmp_path / "a", 40), notes(tmp_path / "b", 5)
    index = str(tmp_path / "ix")
    assert main(["index", "build", "--corpus", str(first), "--index-dir", index]) == 0
    capsys.readouterr()
    assert main(["index", "build", "--corpus", str(second), "--index-dir", index]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "another corpus" in err and "--force" in err
    assert json.loads((tmp_path / "ix" / "manifest.json").read_text())["passage_count"] == 40
    assert main(["index", "build", "--corpus", str(second), "--index-dir", index, "--force"]) == 0
    assert json.loads((tmp_path / "ix" / "manifest.json").read_text())["passage_count"] == 5


def test_an_edited_corpus_is_rebuilt_in_place(tmp_path):
    path = notes(tmp_path / "a", 10)
    directory = build_index(load_corpus(str(path)), tmp_path / "ix", retriever="bm25", progress=False,
                            log=lambda m: None)
    notes(tmp_path / "a", 12)
    build_index(load_corpus(str(path)), directory, retriever="bm25", progress=False, log=lambda m: None)
    assert json.loads((directory / "manifest.json").read_text())["passage_count"] == 12


def test_mismatch_hint_is_a_command_that_works(tmp_path, capsys):
    first, second = notes(tmp_path / "a", 10), notes(tmp_path / "b", 5)
    directory = build_index(load_corpus(str(first)), tmp_path / "ix", retriever="bm25", progress=False,
                            log=lambda m: None)
    with pytest.raises(IndexMismatchError) as refused:
        open_index(directory, corpus=load_corpus(str(second)))
    hint = str(refused.value).split("`")[1]
    assert hint == f"hyporag index build --corpus {second.resolve()}"
    assert main(hint.split()[1:]) == 0  # the suggested command runs as written
    open_index(default_index_dir(load_corpus(str(second))), corpus=load_corpus(str(second)))


def test_refused_empty_corpus_leaves_nothing_behind(tmp_path):
    empty = write_jsonl(tmp_path / "empty.jsonl", [{"id": "x", "title": "t", "contents": ""}])
    with pytest.raises(DataError, match="no passages"):
        build_index(load_corpus(str(empty)), tmp_path / "ix", retriever="bm25", progress=False, log=lambda m: None)
    assert not (tmp_path / "ix").exists()
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "mine.txt").write_text("the user's file")
    with pytest.raises(DataError):
        build_index(load_corpus(str(empty)), tmp_path / "kept", retriever="bm25", progress=False, log=lambda m: None)
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == ["mine.txt"]


def test_asking_for_a_mode_the_index_lacks_is_one_line(tmp_path, capsys):
    corpus = notes(tmp_path / "a", 10)
    ask = ["ask", "--question", "Which cells secrete insulin?", "--option", "A=Beta", "--option", "B=Alpha",
           "--method", "rag", "--corpus", str(corpus), "--retriever", "dense", "--lm", "openai/none"]
    assert main(ask) == 2  # no index yet: embedding is not started behind the user's back
    assert "hyporag index build --corpus" in capsys.readouterr().err
    build_index(load_corpus(str(corpus)), None, retriever="bm25", progress=False, log=lambda m: None)
    code = main(["ask", "--question", "Which cells secrete insulin?", "--option", "A=Beta", "--option", "B=Alpha",
                 "--method", "rag", "--corpus", str(corpus), "--retriever", "dense", "--lm", "openai/none"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "needs a dense index" in err
