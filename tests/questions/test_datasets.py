"""Every benchmark name loads with MIRAGE's counts; hub fallbacks convert, and fail clearly when offline."""

from __future__ import annotations

import pytest

from hyporag.foundation.errors import DataError
from hyporag.questions import datasets
from hyporag.questions.datasets import load_benchmark
from tests.conftest import SHARED

COUNTS = {"medqa": 1273, "medqa-dev": 1272, "mmlu-med": 1089, "mmlu-med-dev": 30, "mmlu-med-val": 123,
          "bioasq": 618, "pubmedqa": 500, "medmcqa": 4183}


@pytest.mark.skipif(SHARED is None, reason="needs ../shared/data")
@pytest.mark.parametrize(("name", "count"), sorted(COUNTS.items()))
def test_counts_match_mirage(name, count):
    report = load_benchmark(name)
    assert len(report.examples) == count
    assert all(e.answer in e.options for e in report.examples)


@pytest.mark.skipif(SHARED is None, reason="needs ../shared/data")
def test_comma_joins_benchmarks():
    assert len(load_benchmark("mmlu-med-dev,mmlu-med-val").examples) == 153


def test_hub_fallback_converts_mmlu(monkeypatch, tmp_path):
    monkeypatch.delenv("HYPORAG_DATA_DIR", raising=False)
    monkeypatch.setattr(datasets, "data_root", lambda explicit=None: None)
    calls = []

    def fake_load(name, config=None, split=None):
        calls.append((name, config, split))
        return [{"question": f"{config}?", "choices": ["w", "x", "y", "z"], "answer": 2}]

    import datasets as hf

    monkeypatch.setattr(hf, "load_dataset", fake_load)
    report = load_benchmark("mmlu-med-val")
    assert report.source == "huggingface-hub"
    assert len(report.examples) == 6 and report.examples[0].answer == "C"
    assert calls[0] == ("cais/mmlu", "anatomy", "validation")


def test_hub_failure_is_one_line(monkeypatch):
    monkeypatch.setattr(datasets, "data_root", lambda explicit=None: None)
    import datasets as hf

    def offline(*args, **kwargs):
        raise ConnectionError("no network")

    monkeypatch.setattr(hf, "load_dataset", offline)
    with pytest.raises(DataError, match="could not load 'GBaker/MedQA-USMLE-4-options'.*HYPORAG_DATA_DIR"):
        load_benchmark("medqa")


def test_unknown_name_lists_choices():
    with pytest.raises(DataError, match="unknown dataset 'nope'.*medqa"):
        load_benchmark("nope")
