"""End to end with the embedded GGUF model (marked: slow, needs the model packages)."""

from __future__ import annotations

import pytest

from hyporag.cli import main
from tests.conftest import SHARED

pytestmark = [pytest.mark.local_lm, pytest.mark.skipif(SHARED is None, reason="needs ../shared/data")]


def test_embedded_model_answers_three_questions(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["eval", "--dataset", "mmlu-med-dev", "--methods", "cot,rag", "--limit", "3", "--budget", "2",
                 "--out", str(out), "--index-dir", str(tmp_path / "index"), "--corpus", "openstax"])
    assert code == 0
    import json

    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 6
    assert all(r["error"] is None and not r["parse_failure"] and r["answer"] in "ABCD" for r in rows)
    assert all(r["calls"] == 1 and r["output_tokens"] > 0 for r in rows)
    assert all(len(r["passage_ids"]) == 2 for r in rows if r["method"] == "rag")
    assert "| cot | 3 |" in capsys.readouterr().out


def test_hcqr_and_chr_end_to_end_with_the_embedded_model(tmp_path):
    import json

    out = tmp_path / "run"
    code = main(["eval", "--dataset", "mmlu-med-dev", "--methods", "hcqr,chr", "--limit", "2", "--budget", "2",
                 "--out", str(out), "--index-dir", str(tmp_path / "index"), "--corpus", "openstax",
                 "--max-tokens", "200"])
    assert code == 0
    rows = {(r["method"], r["question_id"]): r for r in map(json.loads, (out / "results.jsonl").open())}
    assert len(rows) == 4
    for (method, _), row in rows.items():
        assert row["error"] is None and row["answer"] in "ABCD" and len(row["passage_ids"]) == 2
        assert row["calls"] == (3 if method == "hcqr" else 2)
        assert row["retrieval_sees_options"] is True
    assert all(len(r["queries"]) == 3 for (m, _), r in rows.items() if m == "hcqr")
    assert all(r["hypothesis"]["target"] and r["hypothesis"]["mimic"] for (m, _), r in rows.items() if m == "chr")
