"""`hyporag eval` into an `--out` that holds other methods: the natural order (no-retrieval cot first, then rag)
extends the run, and every output afterwards (summary files, the console table, `--fail-under`, `--junit`) covers
every method in the directory, not just the one added."""

from __future__ import annotations

import json

from hyporag.cli import main
from hyporag.testing import fake_openai
from tests.conftest import QUESTIONS, write_jsonl


def argv(base: str, dataset, corpus, out, methods: str, *extra: str) -> list[str]:
    return ["eval", "--dataset", str(dataset), "--corpus", str(corpus), "--methods", methods, "--lm", "openai/m",
            "--api-base", base, "--api-key", "k", "--no-cache", "--budget", "2", "--out", str(out), *extra]


def test_rag_added_to_a_cot_run_extends_it_and_every_output_covers_both(tiny_corpus_dir, tmp_path, capsys):
    dataset, out = write_jsonl(tmp_path / "q.jsonl", QUESTIONS), tmp_path / "run"
    with fake_openai(["m"], letter_logprobs={"A": -0.2, "B": -2.0, "C": -3.0, "D": -4.0}) as server:
        assert main(argv(server.base(), dataset, tiny_corpus_dir, out, "cot")) == 0
        capsys.readouterr()
        junit = tmp_path / "junit.xml"
        code = main(argv(server.base(), dataset, tiny_corpus_dir, out, "rag", "--fail-under", "cot=0.9",
                         "--junit", str(junit)))
        printed = capsys.readouterr()
        assert server.completions == 2 * len(QUESTIONS)  # cot was not answered again
    assert code == 1 and "cot: accuracy 0.333 < 0.900" in printed.err  # a bar on the earlier method counts
    summary = json.loads((out / "summary.json").read_text())
    assert [m["method"] for m in summary["methods"]] == ["cot", "rag"]
    assert summary["methods"][0]["vs_rag_difference"] is not None  # the baseline comparison uses rag's rows
    assert "| cot |" in (out / "summary.md").read_text() and "| rag |" in printed.out
    assert (out / "summary.csv").read_text().count("\n") == 3
    assert junit.read_text().count("<testcase") == 2
    record = json.loads((out / "run.json").read_text())
    assert record["methods"] == ["cot", "rag"] and record["retriever"] is not None


def test_cot_added_to_a_rag_run_keeps_the_index_on_record(tiny_corpus_dir, tmp_path):
    dataset, out = write_jsonl(tmp_path / "q.jsonl", QUESTIONS), tmp_path / "run"
    with fake_openai(["m"]) as server:
        assert main(argv(server.base(), dataset, tiny_corpus_dir, out, "rag")) == 0
        before = json.loads((out / "run.json").read_text())
        assert main(argv(server.base(), dataset, tiny_corpus_dir, out, "cot")) == 0
    after = json.loads((out / "run.json").read_text())
    assert after["methods"] == ["rag", "cot"]
    assert {k: after[k] for k in ("retriever", "index_fingerprint", "index_dir")} == \
        {k: before[k] for k in ("retriever", "index_fingerprint", "index_dir")}
