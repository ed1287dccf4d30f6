"""BM25 engines: tantivy indexes bm25s's very terms and lengths and scores BM25 with its own k1; an index records
its engine, `auto` picks by size, and another engine's index is refused in one line, never silently replaced."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from hyporag.cli import main
from hyporag.foundation.errors import ConfigError, IndexMismatchError
from hyporag.retrieval import bm25_engines, build_index, load_corpus, open_index
from hyporag.retrieval.bm25 import BM25Index, stemmer, tokenize
from hyporag.retrieval.bm25_tantivy import TOKENS_FIELD, TantivyBM25Index
from tests.conftest import PASSAGES, QUESTIONS, write_jsonl

QUERY = "Which pancreatic cells secrete insulin, and which secrete glucagon?"


def _passages() -> list[str]:
    return [f"{title}. {text}" if title else text for _, title, text in PASSAGES]


def _both(tmp_path) -> tuple[BM25Index, TantivyBM25Index]:
    texts = _passages()
    return (BM25Index.build_in_chunks([texts[:5], texts[5:]], tmp_path / "bm25s", show_progress=False),
            TantivyBM25Index.build_in_chunks([texts[:5], texts[5:]], tmp_path / "tantivy", show_progress=False))


def test_tantivy_holds_bm25s_terms_and_scores_bm25_over_their_lengths(tmp_path):
    """Same vocabulary and document frequencies as bm25s; each score is BM25 (k1 1.2, b 0.75) computed from
    bm25s's token lists, so stopwords are out of the lengths too (tantivy's own tokenizer would count them)."""
    bm25s_index, tantivy_index = _both(tmp_path)
    tokens = tokenize(_passages(), stemmer())
    document_frequency = {t: sum(t in doc for doc in tokens) for t in {t for doc in tokens for t in doc}}
    assert set(document_frequency) == set(bm25s_index.model.vocab_dict) - {""}
    for term, count in document_frequency.items():
        assert tantivy_index.searcher.doc_freq(TOKENS_FIELD, term) == count, term

    n, average = len(tokens), sum(map(len, tokens)) / len(tokens)
    query_terms = tokenize([QUERY], stemmer())[0]
    k1, b = TantivyBM25Index.K1, TantivyBM25Index.B

    def bm25(doc: list[str]) -> float:
        total = 0.0
        for term in query_terms:
            tf, df = doc.count(term), document_frequency.get(term, 0)
            if tf:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                total += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / average))
        return total

    expected = np.array([bm25(doc) for doc in tokens])
    rows, scores = tantivy_index.search_many([QUERY], 5)
    np.testing.assert_allclose(scores[0], expected[rows[0]], rtol=1e-4)
    assert list(rows[0]) == list(np.argsort(-expected, kind="stable")[:5])


def test_score_rows_gives_each_row_its_search_score_and_zero_without_a_match(tmp_path):
    for index in _both(tmp_path):
        rows, scores = index.search_many([QUERY], 4)
        unmatched = [r for r in range(len(PASSAGES)) if index.score_rows(QUERY, np.array([r]))[0] == 0]
        assert unmatched, "the tiny corpus has passages without a query term"
        asked = np.array([unmatched[0], *rows[0][::-1]])
        np.testing.assert_allclose(index.score_rows(QUERY, asked), [0.0, *scores[0][::-1]], rtol=1e-6)
        assert not index.score_rows("the of and", asked).any()  # stopwords only: no term, no score


def test_queries_without_terms_get_no_rows_on_both_engines(tmp_path):
    for index in _both(tmp_path):
        rows, scores = index.search_many(["the of and", QUERY], 3)
        assert (rows[0] == -1).all() and not scores[0].any() and (rows[1] >= 0).all()


def test_the_index_records_its_engine_and_auto_picks_by_size(tiny_corpus_dir, tmp_path, monkeypatch):
    corpus = load_corpus(str(tiny_corpus_dir))
    small = build_index(corpus, tmp_path / "small", retriever="bm25", progress=False, log=lambda m: None)
    assert json.loads((small / "manifest.json").read_text())["parts"]["bm25"]["engine"] == "bm25s"
    monkeypatch.setattr(bm25_engines, "TANTIVY_FROM", len(PASSAGES))
    large = build_index(corpus, tmp_path / "large", retriever="bm25", progress=False, log=lambda m: None)
    part = json.loads((large / "manifest.json").read_text())["parts"]["bm25"]
    assert part["engine"] == "tantivy" and part["k1"] == 1.2
    retriever = open_index(large, corpus=corpus)
    assert isinstance(retriever.bm25, TantivyBM25Index)
    assert "p1" in [h.id for h in retriever.search("which cells secrete insulin", 3)]


def test_auto_switches_to_tantivy_where_bm25s_would_outgrow_half_the_ram():
    """bm25s reads every posting of a query's terms, so its arrays must stay in memory: ~400 bytes a passage."""
    gib = 2**30
    assert bm25_engines.tantivy_from(24 * gib) == int(0.5 * 24 * gib / 400)  # ~32M passages on this machine's kind
    assert bm25_engines.tantivy_from(256 * gib) > 54_200_000  # MedCorp stays on bm25s with 256 GiB
    assert bm25_engines.tantivy_from(None) == 25_000_000  # RAM unknown: the earlier threshold
    assert bm25_engines.resolve_engine("auto", bm25_engines.TANTIVY_FROM - 1) == "bm25s"
    assert bm25_engines.resolve_engine("auto", bm25_engines.TANTIVY_FROM) == "tantivy"


def test_another_engines_index_is_refused_in_one_line_and_replaced_only_when_forced(tiny_corpus_dir, tmp_path):
    corpus = load_corpus(str(tiny_corpus_dir))
    directory = build_index(corpus, tmp_path / "ix", retriever="bm25", progress=False, log=lambda m: None,
                            bm25_engine="tantivy")
    with pytest.raises(IndexMismatchError, match="built by 'tantivy', not the 'bm25s' asked for") as refused:
        open_index(directory, asked_bm25_engine="bm25s")
    assert "\n" not in str(refused.value) and "--force" in str(refused.value)
    assert open_index(directory, asked_bm25_engine="auto").bm25.ENGINE == "tantivy"
    with pytest.raises(IndexMismatchError, match="pass --force"):
        build_index(corpus, directory, retriever="bm25", progress=False, log=lambda m: None, bm25_engine="bm25s")
    assert json.loads((directory / "manifest.json").read_text())["parts"]["bm25"]["engine"] == "tantivy"
    build_index(corpus, directory, retriever="bm25", progress=False, log=lambda m: None, bm25_engine="bm25s",
                force=True)
    assert isinstance(open_index(directory, asked_bm25_engine="bm25s").bm25, BM25Index)


def test_an_engine_this_hyporag_does_not_search_is_refused(tiny_corpus_dir, tmp_path):
    directory = build_index(load_corpus(str(tiny_corpus_dir)), tmp_path / "ix", retriever="bm25", progress=False,
                            log=lambda m: None)
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["parts"]["bm25"]["engine"] = "lucene"
    (directory / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexMismatchError, match="'lucene' engine, which this hyporag does not search"):
        open_index(directory)
    with pytest.raises(ConfigError, match="unknown BM25 engine 'lucene'"):
        bm25_engines.resolve_engine("lucene", 10)


def test_cli_builds_on_the_engine_asked_and_eval_refuses_another(server, tiny_corpus_dir, tmp_path, capsys):
    index = str(tmp_path / "ix")
    assert main(["index", "build", "--corpus", str(tiny_corpus_dir), "--index-dir", index,
                 "--bm25-engine", "tantivy"]) == 0
    assert "bm25 (tantivy)" in capsys.readouterr().err
    questions = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    code = main(["eval", "--dataset", str(questions), "--corpus", str(tiny_corpus_dir), "--index-dir", index,
                 "--methods", "rag", "--lm", "openai/m", "--api-key", "k", "--api-base",
                 f"http://127.0.0.1:{server.server_port}/v1", "--bm25-engine", "bm25s", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "built by 'tantivy', not the 'bm25s' asked for" in err
    assert server.requests == 0  # refused before any LM call


def test_two_stage_search_needs_its_forward_part_and_is_recorded_and_kept_on_resume(server, tiny_corpus_dir,
                                                                                      tmp_path, capsys):
    index = str(tmp_path / "ix")
    assert main(["index", "build", "--corpus", str(tiny_corpus_dir), "--index-dir", index]) == 0
    questions = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    base = ["eval", "--dataset", str(questions), "--corpus", str(tiny_corpus_dir), "--index-dir", index,
            "--methods", "rag", "--lm", "openai/m", "--api-key", "k", "--api-base",
            f"http://127.0.0.1:{server.server_port}/v1", "--out", str(tmp_path / "run")]
    capsys.readouterr()
    code = main([*base, "--bm25-search", "two-stage"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "no forward index for the two-stage BM25 search" in err
    assert f"--index-dir {index} --bm25-search two-stage" in err and server.requests == 0
    assert main(["index", "build", "--corpus", str(tiny_corpus_dir), "--index-dir", index,
                 "--bm25-search", "two-stage"]) == 0
    err = capsys.readouterr().err
    assert "BM25 forward index" in err and "bm25 forward index (two-stage search)" in err  # estimate, then build
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    assert manifest["parts"]["bm25_forward"]["bytes"] > 0
    assert any(name.startswith("bm25-forward/") for name in manifest["files"])  # checked on every load
    assert main([*base, "--bm25-search", "two-stage", "--limit", "1"]) == 0
    assert json.loads((tmp_path / "run" / "run.json").read_text())["bm25_search"] == "two-stage"
    capsys.readouterr()
    assert main([*base, "--limit", "2"]) == 2  # the rows so far were ranked by the two-stage search
    assert "different bm25_search" in capsys.readouterr().err
