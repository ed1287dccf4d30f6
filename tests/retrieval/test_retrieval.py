"""Retrieval: index round trip, modes, the contrastive query vector against brute force, refusals, budget merge."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hyporag.foundation.errors import DataError, IndexMismatchError
from hyporag.retrieval import Hit, LambdaSchedule, build_index, load_corpus, merge_to_budget, open_index
from hyporag.retrieval.query import WeightedQuery
from tests.conftest import PASSAGES, dummy_roles, write_jsonl


def contrast(retriever, plus: str, minus: str, lam: float, k: int, mode: str | None = None):
    """sim(d, plus) − λ·sim(d, minus): one weighted query."""
    return retriever.search_weighted([WeightedQuery.difference(plus, minus, lam)], k, mode=mode)[0]


def test_bm25_dense_hybrid_find_the_insulin_passage(bm25_retriever):
    for mode in ("bm25", "dense", "hybrid"):
        hits = bm25_retriever.search("which cells secrete insulin", 3, mode=mode)
        assert hits and len(hits) <= 3
        assert "p1" in [h.id for h in hits], mode


def test_search_many_matches_single_searches(bm25_retriever):
    queries = ["insulin beta cells", "bone resorption osteoclasts", "erythropoietin kidney"]
    for mode in ("bm25", "dense", "hybrid"):
        batched = bm25_retriever.search_many(queries, 4, mode=mode)
        assert [[h.id for h in hits] for hits in batched] == [
            [h.id for h in bm25_retriever.search(q, 4, mode=mode)] for q in queries]


def test_contrastive_vector_equals_brute_force(tiny_retriever):
    """d·(ĥ+ − λĥ−) searched once ranks exactly like scoring every passage with sim(d,H+) − λ·sim(d,H−)."""
    h_plus, h_minus, lam = "beta cells secrete insulin", "alpha cells secrete glucagon", 0.7
    dense = tiny_retriever.dense
    vectors = dense.index.reconstruct_n(0, dense.index.ntotal)
    a, b = dense.encode([h_plus, h_minus])
    brute = vectors @ a - lam * (vectors @ b)
    expected_rows = np.argsort(-brute, kind="stable")[:5]
    hits = contrast(tiny_retriever, h_plus, h_minus, lam, 5, mode="dense")
    store_ids = [p.id for p in tiny_retriever.store.get(list(expected_rows))]
    assert [h.id for h in hits] == store_ids
    np.testing.assert_allclose([h.score for h in hits], brute[expected_rows], rtol=1e-5, atol=1e-6)


def test_contrastive_pushes_mimic_passage_down(bm25_retriever):
    plain = [h.id for h in bm25_retriever.search("pancreas secretes insulin glucagon", 10, mode="bm25")]
    ranked = [h.id for h in contrast(bm25_retriever, "pancreas beta cells secrete insulin",
                                     "pancreas alpha cells secrete glucagon", 1.0, 10, mode="bm25")]
    assert ranked.index("p2") > ranked.index("p1")
    assert "p2" in plain


@pytest.mark.parametrize("kind", ["linear", "threshold", "sigmoid"])
def test_adaptive_lambda_falls_as_hypotheses_converge(kind):
    schedule = LambdaSchedule(kind, lam_min=0.1, lam_max=1.0, tau=0.6)
    assert schedule(0.1) >= schedule(0.95)
    assert 0.1 <= schedule(0.95) <= 1.0


def test_mismatched_corpus_is_refused(tiny_retriever, tiny_corpus_dir, tmp_path):
    other = write_jsonl(tmp_path / "other" / "c.jsonl", [{"id": "z", "title": "", "contents": "different text"}])
    with pytest.raises(IndexMismatchError, match="does not match"):
        open_index(tiny_retriever.directory, corpus=load_corpus(str(other)))


def test_truncated_and_missing_index_files_are_refused(tiny_retriever):
    directory = tiny_retriever.directory
    vectors = directory / "dense" / "vectors.npy"
    vectors.write_bytes(vectors.read_bytes()[:-16])
    with pytest.raises(IndexMismatchError, match="truncated or replaced"):
        open_index(directory)
    vectors.unlink()
    with pytest.raises(IndexMismatchError, match="index file missing"):
        open_index(directory)


def test_incompatible_manifest_version_is_refused(tiny_retriever):
    path = tiny_retriever.directory / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["format_version"] = 999
    path.write_text(json.dumps(manifest))
    with pytest.raises(IndexMismatchError, match="index format 999"):
        open_index(tiny_retriever.directory)


def test_rebuild_resumes_and_reuses_finished_parts(tiny_corpus_dir, tmp_path):
    corpus = load_corpus(str(tiny_corpus_dir))
    messages: list[str] = []
    directory = build_index(corpus, tmp_path / "ix", retriever="bm25", progress=False, log=messages.append)
    assert any("bm25" in m for m in messages)
    messages.clear()
    build_index(corpus, directory, retriever="both", embedder_name="hashing-32", progress=False, log=messages.append)
    assert not any(m.startswith("bm25") or m.startswith("passage store") for m in messages)
    assert any(m.startswith("dense") for m in messages)


def test_corpus_errors(tmp_path):
    empty = tmp_path / "empty"
    write_jsonl(empty / "e.jsonl", [{"id": "a", "contents": "  "}])
    with pytest.raises(DataError, match="no passages with text"):
        list(load_corpus(str(empty)))
    dup = tmp_path / "dup"
    write_jsonl(dup / "d.jsonl", [{"id": "a", "contents": "x"}, {"id": "a", "contents": "y"}])
    with pytest.raises(DataError, match=r"d\.jsonl:2: duplicate passage id 'a'"):
        list(load_corpus(str(dup)))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "b.jsonl").write_bytes(b'{"id": "a", "contents": "ok"}\n{"id": "b", "contents": "\xff\xfe"}\n')
    with pytest.raises(DataError, match=r"b\.jsonl:2: not UTF-8"):
        list(load_corpus(str(bad)))


def test_empty_passages_are_skipped_and_counted(tmp_path):
    directory = tmp_path / "c"
    write_jsonl(directory / "c.jsonl", [{"id": "a", "contents": "text"}, {"id": "b", "contents": ""}])
    corpus = load_corpus(str(directory))
    assert [p.id for p in corpus] == ["a"] and corpus.empty_skipped == 1


def _hit(pid: str, score: float = 0.0) -> Hit:
    return Hit(pid, "", "", score)


def test_round_robin_gives_each_query_its_share():
    lists = [[_hit(f"a{i}") for i in range(10)], [_hit(f"b{i}") for i in range(10)], [_hit("a0"), _hit("c1")]]
    merged = [h.id for h in merge_to_budget(lists, 5)]
    assert merged == ["a0", "b0", "a1", "b1", "c1"]


def test_score_policy_orders_globally():
    lists = [[_hit("a", 0.2), _hit("b", 0.1)], [_hit("c", 0.9), _hit("a", 0.5)]]
    assert [h.id for h in merge_to_budget(lists, 3, "score")] == ["c", "a", "b"]


ids = st.lists(st.sampled_from([p[0] for p in PASSAGES]), max_size=12)


@given(st.lists(ids, min_size=1, max_size=4), st.integers(min_value=0, max_value=20),
       st.sampled_from(["round_robin", "score"]))
def test_merge_properties(id_lists, budget, policy):
    lists = [[_hit(i, float(-n)) for n, i in enumerate(dict.fromkeys(ranked))] for ranked in id_lists]
    merged = merge_to_budget(lists, budget, policy)
    assert len(merged) <= budget
    assert len({h.id for h in merged}) == len(merged)
    if policy == "round_robin" and budget >= len(lists):
        firsts = {r[0].id for r in lists if r}
        assert all(any(h.id == f for h in merged) for f in firsts)


def test_corrupted_same_size_file_fails_checksum(tiny_retriever):
    path = tiny_retriever.directory / "passages.sqlite"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(IndexMismatchError, match="checksum differs"):
        open_index(tiny_retriever.directory)


def test_interrupted_embedding_resumes_from_shards(tiny_corpus_dir, tmp_path, monkeypatch):
    """A build killed mid-embedding leaves finished shards; the re-run embeds only what is missing."""
    from hyporag.retrieval import dense
    from hyporag.retrieval.encoders import encoder_spec, make_encoder

    corpus = load_corpus(str(tiny_corpus_dir))
    directory = build_index(corpus, tmp_path / "ix", retriever="bm25", progress=False, log=lambda m: None)
    from hyporag.retrieval.store import PassageStore

    store = PassageStore(directory / "passages.sqlite")
    encoder = make_encoder(encoder_spec("hashing-16"))
    calls = []
    original = encoder.encode_passages

    def flaky(passages, **kwargs):
        calls.append(len(passages))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(passages, **kwargs)

    monkeypatch.setattr(encoder, "encode_passages", flaky)
    with pytest.raises(KeyboardInterrupt):
        dense.embed_in_shards(store.pairs(4), encoder, directory / "dense" / "shards", store.count, progress=False)
    calls.clear()
    monkeypatch.setattr(encoder, "encode_passages", lambda ps, **kw: (calls.append(len(ps)), original(ps))[1])
    vectors = dense.embed_in_shards(store.pairs(4), encoder, directory / "dense" / "shards", store.count,
                                    progress=False)
    assert len(vectors) == 10 and calls == [4, 2]  # the first shard was reused, not re-embedded


def test_hub_corpus_is_materialised_once_when_no_local_copy(monkeypatch):
    import datasets as hf

    from hyporag.retrieval import corpus as corpus_module

    calls = []

    def fake_load(name, split=None, streaming=False):
        calls.append(name)
        return [{"id": "t1", "title": "Book", "content": "Insulin is secreted by beta cells."}]

    monkeypatch.setattr(corpus_module, "data_root", lambda explicit=None: None)
    monkeypatch.setattr(hf, "load_dataset", fake_load)
    first = load_corpus("textbooks")
    assert [p.id for p in first] == ["t1"] and first.source == "huggingface-hub:MedRAG/textbooks"
    assert load_corpus("textbooks").fingerprint() == first.fingerprint() and calls == ["MedRAG/textbooks"]
    with pytest.raises(DataError, match="no hub copy"):
        load_corpus("openstax")


def test_shards_from_another_embedder_are_discarded(tmp_path):
    from hyporag.retrieval.dense import embed_in_shards
    from hyporag.retrieval.encoders import encoder_spec, make_encoder

    pairs = [[("", "a b"), ("t", "c d")], [("", "e f")]]
    first = embed_in_shards(iter(pairs), make_encoder(encoder_spec("hashing-8")), tmp_path / "s", 3, progress=False)
    second = embed_in_shards(iter(pairs), make_encoder(encoder_spec("hashing-16")), tmp_path / "s", 3,
                             progress=False)
    assert first.shape == (3, 8) and second.shape == (3, 16)


def test_stopword_only_queries_return_nothing_from_bm25(tiny_retriever):
    assert tiny_retriever.search("the of and", 3, mode="bm25") == []
    assert tiny_retriever.search("", 3, mode="bm25") == []
    batched = tiny_retriever.search_many(["the of", "insulin beta cells"], 3, mode="bm25")
    assert batched[0] == [] and "p1" in [h.id for h in batched[1]]
    assert tiny_retriever.search("the of and", 3, mode="hybrid")  # dense still answers
    assert [h.id for h in contrast(tiny_retriever, "the", "of", 1.0, 3, mode="bm25")] == []


def test_programs_copied_by_teleprompters_share_one_open_index(tiny_retriever, caplog):

    from hyporag.programs import make_program

    program = make_program("chr", retriever=tiny_retriever, roles=dummy_roles([{}]), budget=2)
    with caplog.at_level("WARNING"):
        copy = program.deepcopy()
    assert copy.retriever is tiny_retriever
    assert "Failed to deep copy" not in caplog.text


def test_sum_merge_adds_a_passages_scores_over_the_queries_that_found_it():
    def hit(pid, score):
        return Hit(pid, "", pid, score)

    first = [hit("a", 10.0), hit("b", 8.0), hit("c", 1.0)]
    second = [hit("c", 2.0), hit("d", 1.5)]  # another query, another BM25 scale
    merged = merge_to_budget([first, second], budget=3, policy="sum", normalize=True)
    # normalised: a 1.0, b 0.8, c 0.1 + 1.0 = 1.1, d 0.75 -> c first, found by both queries
    assert [h.id for h in merged] == ["c", "a", "b"]
    assert merged[0].score == pytest.approx(1.1)
    raw = merge_to_budget([first, second], budget=4, policy="sum")  # comparable scores (cosine) add as they are
    assert [h.id for h in raw] == ["a", "b", "c", "d"] and raw[2].score == pytest.approx(3.0)
