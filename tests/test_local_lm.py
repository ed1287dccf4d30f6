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
