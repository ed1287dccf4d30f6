"""MedRAG's corpora by name through the hub, on a fake stream in MedRAG's snippet format: streamed into the cache
once, resumed after an interruption without a duplicate or torn line, and read without doubling the title."""

from __future__ import annotations

import json

import pytest

from hyporag.foundation.errors import DataError
from hyporag.foundation.paths import cache_dir
from hyporag.retrieval import corpus as corpus_module
from hyporag.retrieval import load_corpus
from hyporag.retrieval.hub_corpus import HUB_CORPORA


def medrag_rows(prefix: str, n: int) -> list[dict]:
    return [{"id": f"{prefix}{i}", "title": f"Title {i}", "content": f"Insulin fact {i}.",
             "contents": f"Title {i}. Insulin fact {i}."} for i in range(n)]


class FakeStream:
    """What `datasets.load_dataset(..., streaming=True)` returns: iterable, with `skip(n)`; may fail mid-way."""

    def __init__(self, rows, fail_after=None, log=None):
        self.rows, self.fail_after, self.log = rows, fail_after, log

    def skip(self, n):
        self.log.append(("skip", n))
        return FakeStream(self.rows[n:], self.fail_after, self.log)

    def __iter__(self):
        for i, row in enumerate(self.rows):
            if self.fail_after is not None and i == self.fail_after:
                raise KeyboardInterrupt
            yield row


@pytest.fixture
def hub(monkeypatch):
    import datasets as hf

    state = {"fail_after": None, "log": []}

    def fake_load(name, split=None, streaming=False):
        assert streaming, "a hub corpus must be streamed, never loaded whole"
        state["log"].append(("load", name))
        return FakeStream(medrag_rows(name.split("/")[1][:2], 5), state["fail_after"], state["log"])

    monkeypatch.setattr(corpus_module, "data_root", lambda explicit=None: None)
    monkeypatch.setattr(hf, "load_dataset", fake_load)
    return state


def test_pubmed_by_name_streams_medrag_snippets_and_reads_content_once(hub):
    corpus = load_corpus("pubmed")
    passages = list(corpus)
    assert [p.id for p in passages] == ["pu0", "pu1", "pu2", "pu3", "pu4"]
    assert passages[0].title == "Title 0" and passages[0].contents == "Insulin fact 0."  # not "Title 0. Title 0..."
    line = json.loads(corpus.files[0].read_text().splitlines()[0])
    assert set(line) == {"id", "title", "content", "contents"}  # MedRAG's snippet format
    assert corpus.source == "huggingface-hub:MedRAG/pubmed"
    load_corpus("pubmed")
    assert [e for e in hub["log"] if e[0] == "load"] == [("load", "MedRAG/pubmed")]  # cached after the first


def test_medcorp_is_all_four_medrag_corpora(hub):
    corpus = load_corpus("medcorp")
    assert HUB_CORPORA["medcorp"] == ("MedRAG/textbooks", "MedRAG/pubmed", "MedRAG/statpearls", "MedRAG/wikipedia")
    assert len(list(corpus)) == 20 and len(corpus.files) == 4


def test_an_interrupted_download_resumes_after_its_last_complete_line(hub):
    hub["fail_after"] = 3
    with pytest.raises(KeyboardInterrupt):
        load_corpus("wikipedia")
    partial = cache_dir("corpora") / "MedRAG__wikipedia.partial"
    with partial.open("a") as handle:
        handle.write('{"id": "torn')  # a kill mid-line
    hub["fail_after"] = None
    corpus = load_corpus("wikipedia")
    assert ("skip", 3) in hub["log"]
    assert [p.id for p in corpus] == ["wi0", "wi1", "wi2", "wi3", "wi4"]  # no duplicate, no torn line


def test_an_unknown_corpus_names_the_hub_ones_too():
    with pytest.raises(DataError, match="pubmed"):
        load_corpus("no-such-corpus")
