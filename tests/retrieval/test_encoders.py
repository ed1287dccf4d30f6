"""Encoder specs on tiny BERT models built here from a config (random weights): pooling, prefixes, lengths,
MedCPT's (title, content) pairs and separate query/passage models; the index records its spec, rebuilds the query
side from it, and refuses another query encoder. No model is downloaded."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hyporag.foundation.errors import ConfigError, IndexMismatchError, ModelError
from hyporag.retrieval import build_index, load_corpus, open_index
from hyporag.retrieval.encoders import PRESETS, EncoderSpec, encoder_spec, make_encoder
from tests.tiny_bert import tiny_bert


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("bert")
    return tiny_bert(root / "query", 0), tiny_bert(root / "passage", 1)


def raw_hidden(model_dir, first, second=None, max_length=64):
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer, model = AutoTokenizer.from_pretrained(model_dir), AutoModel.from_pretrained(model_dir).eval()
    batch = tokenizer(first, second, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    with torch.no_grad():
        return model(**batch).last_hidden_state.numpy(), batch["attention_mask"].numpy()


def test_cls_pooling_takes_the_first_token_unnormalised_like_medcpt(models):
    spec = EncoderSpec("t", models[0], pooling="cls", normalize=False)
    vectors = make_encoder(spec).encode_queries(["insulin beta cells", "kidney"])
    hidden, _ = raw_hidden(models[0], ["insulin beta cells", "kidney"])
    np.testing.assert_allclose(vectors, hidden[:, 0], atol=1e-5)
    assert not np.allclose(np.linalg.norm(vectors, axis=1), 1.0)


def test_mean_pooling_ignores_padding_and_normalises(models):
    encoder = make_encoder(EncoderSpec("t", models[0], pooling="mean"))
    alone = encoder.encode_queries(["kidney"])
    padded = encoder.encode_queries(["kidney", "insulin beta cells secrete the hormone of the pancreas"])
    np.testing.assert_allclose(alone[0], padded[0], atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(padded, axis=1), 1.0, atol=1e-5)


def test_prefixes_go_on_their_own_side_only(models):
    plain = make_encoder(EncoderSpec("plain", models[0]))
    e5 = make_encoder(EncoderSpec("e5", models[0], query_prefix="query: ", passage_prefix="passage: "))
    np.testing.assert_allclose(e5.encode_queries(["insulin"]), plain.encode_queries(["query: insulin"]), atol=1e-5)
    np.testing.assert_allclose(e5.encode_passages([("", "insulin")]), plain.encode_queries(["passage: insulin"]),
                               atol=1e-5)


def test_medcpt_style_passages_are_title_content_pairs_on_the_passage_model(models):
    query_model, passage_model = models
    spec = EncoderSpec("medcpt-like", query_model, passage_model, pooling="cls", query_max_length=4,
                       passage_max_length=64, title_content_pair=True, normalize=False)
    encoder = make_encoder(spec)
    passages = encoder.encode_passages([("pancreas", "beta cells secrete insulin")])
    hidden, _ = raw_hidden(passage_model, ["pancreas"], ["beta cells secrete insulin"])
    np.testing.assert_allclose(passages[0], hidden[0, 0], atol=1e-5)
    queries = encoder.encode_queries(["insulin beta cells secrete the hormone"])
    truncated, mask = raw_hidden(query_model, ["insulin beta cells secrete the hormone"], max_length=4)
    assert mask.shape[1] == 4  # the query side's 64-token cut (4 here) is applied
    np.testing.assert_allclose(queries[0], truncated[0, 0], atol=1e-5)


def test_presets_carry_the_papers_conventions():
    medcpt = PRESETS["medcpt"]
    assert (medcpt.query_model, medcpt.passage_model) == ("ncbi/MedCPT-Query-Encoder", "ncbi/MedCPT-Article-Encoder")
    assert (medcpt.pooling, medcpt.query_max_length, medcpt.passage_max_length) == ("cls", 64, 512)
    assert medcpt.title_content_pair and not medcpt.normalize
    assert PRESETS["e5-large-v2"].query_prefix == "query: " and PRESETS["e5-large-v2"].passage_prefix == "passage: "
    assert PRESETS["e5-large-v2"].pooling == "mean"
    assert PRESETS["bge-large"].query_prefix.startswith("Represent this sentence") and PRESETS["bge-large"].pooling \
        == "cls"
    assert encoder_spec("all-MiniLM-L6-v2") == PRESETS["minilm"]


def test_a_hub_name_that_cannot_load_is_one_line(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # no hub here: fail at once, not retry
    with pytest.raises(ModelError) as caught:
        make_encoder(encoder_spec("medcpt"))
    assert "ncbi/MedCPT-Query-Encoder" in str(caught.value) and "\n" not in str(caught.value)


def test_spec_file_is_checked_field_by_field(tmp_path):
    bad = tmp_path / "spec.json"
    bad.write_text(json.dumps({"name": "x", "query_model": "m", "poolin": "cls"}))
    with pytest.raises(ConfigError, match="unknown encoder field"):
        encoder_spec(str(bad))
    bad.write_text(json.dumps({"name": "x", "query_model": "m", "pooling": "max"}))
    with pytest.raises(ConfigError, match="pooling must be one of"):
        encoder_spec(str(bad))


def test_index_records_its_spec_and_queries_use_its_query_side(models, tiny_corpus_dir, tmp_path):
    spec_file = tmp_path / "asym.json"
    spec_file.write_text(json.dumps({"name": "asym", "query_model": models[0], "passage_model": models[1],
                                     "pooling": "cls", "title_content_pair": True, "query_max_length": 16}))
    corpus = load_corpus(str(tiny_corpus_dir))
    directory = build_index(corpus, tmp_path / "ix", retriever="dense", embedder_name=str(spec_file),
                            progress=False, log=lambda m: None)
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["parts"]["dense"]["encoder"]["passage_model"] == models[1]
    retriever = open_index(directory, corpus=corpus, mode="dense")
    assert retriever.dense.encoder.spec.name == "asym"
    expected = make_encoder(encoder_spec(str(spec_file))).encode_queries(["insulin"])
    np.testing.assert_allclose(retriever.dense.encode(["insulin"]), expected, atol=1e-5)
    assert len(retriever.search("insulin beta cells", 3)) == 3
    assert open_index(directory, corpus=corpus, mode="dense", asked_encoder=str(spec_file)).dense is not None
    with pytest.raises(IndexMismatchError) as caught:
        open_index(directory, corpus=corpus, mode="dense", asked_encoder="e5-large-v2")
    message = str(caught.value)
    assert "made by encoder 'asym'" in message and "'e5-large-v2'" in message and "\n" not in message
    with pytest.raises(IndexMismatchError, match="built with encoder 'asym'"):
        build_index(corpus, directory, retriever="dense", embedder_name="hashing-16", progress=False,
                    log=lambda m: None)
