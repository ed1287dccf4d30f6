"""End to end with the embedded GGUF model (marked: slow, needs the model packages)."""

from __future__ import annotations

import math

import pytest

from hyporag.cli import main
from hyporag.testing import SMALL_MODEL
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
                 "--max-tokens", "200", "--lm", f"local:{SMALL_MODEL}"])
    assert code == 0
    rows = {(r["method"], r["question_id"]): r for r in map(json.loads, (out / "results.jsonl").open())}
    assert len(rows) == 4
    for (method, _), row in rows.items():
        assert row["error"] is None and row["answer"] in "ABCD" and len(row["passage_ids"]) == 2
        # the embedded engine's logprobs at the answer letter: every option's probability, from the same call
        assert row["option_logprob_status"] == "ok" and set(row["option_logprobs"]) == {"A", "B", "C", "D"}
        assert abs(sum(math.exp(v) for v in row["option_logprobs"].values()) - 1) < 1e-4
        assert row["calls"] == (3 if method == "hcqr" else 2)
        assert row["retrieval_sees_options"] is True
    assert all(len(r["queries"]) == 3 for (m, _), r in rows.items() if m == "hcqr")
    assert all(r["hypothesis"]["target"] and r["hypothesis"]["mimic"] for (m, _), r in rows.items() if m == "chr")


def test_the_paper_protocol_reads_the_option_probabilities_after_the_reasoning(tmp_path):
    """Under --protocol paper the reply reasons first and gives the letter last; the letter's position is found
    after the reasoning, so its rows carry the reader's distribution like the fast protocol's."""
    import json

    out = tmp_path / "run"
    code = main(["eval", "--dataset", "mmlu-med-dev", "--methods", "cot", "--limit", "2", "--protocol", "paper",
                 "--max-tokens", "300", "--out", str(out), "--lm", f"local:{SMALL_MODEL}"])
    assert code == 0
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert row["error"] is None and row["answer"] in "ABCD" and row["answer_reasoning"]
        assert row["option_logprob_status"] == "ok", row["answer_reply"]
        assert abs(sum(math.exp(v) for v in row["option_logprobs"].values()) - 1) < 1e-4
        assert max(row["option_logprobs"], key=row["option_logprobs"].get) == row["answer"]


def test_readme_python_api_example_runs_as_written(tmp_path, monkeypatch):
    """index → fit → evaluate → load → ask on a real embedded model, 4 fit questions and 2 more evaluated (the
    0.5B in place of the default 1.5B that `from_specs()` picks: the same engine at half the time)."""
    import json

    from hyporag.lm.client import LMRoles
    from tests.project.test_readme_api import readme_block

    real = LMRoles.from_specs.__func__
    monkeypatch.setattr(LMRoles, "from_specs", classmethod(
        lambda cls, lm=None, *a, **k: real(cls, lm or f"local:{SMALL_MODEL}", *a, **k)))
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(readme_block(), "README.md", "exec"), scope)  # noqa: S102 - the README's own example
    assert (tmp_path / "runs" / "api-fit" / "artifact" / "manifest.json").is_file()
    rows = [json.loads(line) for line in (tmp_path / "runs" / "api-eval" / "results.jsonl").open()]
    assert len(rows) == 2 and all(r["error"] is None and r["answer"] in "ABCD" for r in rows)
    assert scope["pred"].answer in ("A", "B") and len(scope["pred"].passages) == 3


def test_fit_with_the_embedded_model_on_six_questions(tmp_path, capsys):
    import json

    from tests.conftest import write_jsonl

    questions = [
        {"id": "s1", "question": "Which module provides a heap queue (priority queue) algorithm?",
         "options": {"A": "heapq", "B": "bisect"}, "answer": "A"},
        {"id": "s2", "question": "Which module keeps a list sorted without sorting after each insertion?",
         "options": {"A": "heapq", "B": "bisect"}, "answer": "B"},
        {"id": "s3", "question": "Which function serializes an object to a JSON formatted str?",
         "options": {"A": "json.dumps", "B": "json.loads"}, "answer": "A"},
        {"id": "s4", "question": "Which function makes a deep copy of an object?",
         "options": {"A": "copy.copy", "B": "copy.deepcopy"}, "answer": "B"},
        {"id": "s5", "question": "Which class counts hashable objects?",
         "options": {"A": "collections.Counter", "B": "collections.deque"}, "answer": "A"},
        {"id": "s6", "question": "Which function recursively deletes a directory tree?",
         "options": {"A": "shutil.copytree", "B": "shutil.rmtree"}, "answer": "B"},
    ]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [
        {"id": "heapq", "title": "heapq", "contents": "Heap queue algorithm (a.k.a. priority queue)."},
        {"id": "bisect", "title": "bisect", "contents": "Bisection algorithms: maintain a list in sorted order."},
        {"id": "json.dumps", "title": "json.dumps", "contents": "Serialize obj to a JSON formatted str."},
        {"id": "copy.deepcopy", "title": "copy.deepcopy", "contents": "Deep copy operation on arbitrary objects."},
        {"id": "Counter", "title": "collections.Counter", "contents": "Dict subclass for counting hashable items."},
        {"id": "rmtree", "title": "shutil.rmtree", "contents": "Recursively delete a directory tree."}])
    dataset = write_jsonl(tmp_path / "dev.jsonl", questions)
    out = tmp_path / "fit"
    assert main(["fit", "--dataset", str(dataset), "--corpus", str(corpus), "--method", "chr", "--out", str(out),
                 "--trials", "2", "--budget", "2", "--splits", "0.34,0.33,0.33", "--max-demos", "1",
                 "--domain", "Python standard library", "--max-tokens", "200", "--lm", f"local:{SMALL_MODEL}"]) == 0
    state = json.loads((out / "fit.json").read_text())
    assert list(state["stages"]) == ["index", "split", "tune", "compile", "freeze", "evaluate", "report"]
    rows = [json.loads(line) for line in (out / "heldout" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and all(r["error"] is None and r["answer"] in "AB" for r in rows)
    assert "tuned vs untuned" in (out / "report.md").read_text()
