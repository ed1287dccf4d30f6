"""The race before tuning, against a served model: a candidate whose passages mislead the reader on every question
is dropped early and never tuned; the others are raced on, and the race's answers are kept for a resumed fit."""

from __future__ import annotations

import json

from hyporag.cli import main
from hyporag.eval.comparisons import run_order
from hyporag.jobs.fit_race import drops_in
from hyporag.testing import fake_openai
from tests.conftest import PASSAGES, write_jsonl
from tests.optimizers.test_fit_candidates import gold, oracle  # noqa: F401  (the fixture registers both methods)

SAYS = {f"ORACLE-SAYS-{letter}": ({"answer": letter}, None) for letter in "AB"}


def test_a_candidate_wrong_on_every_question_is_dropped_early_and_the_others_go_on(tmp_path, oracle):  # noqa: F811
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": i, "title": t, "contents": c} for i, t, c in PASSAGES])
    dataset = write_jsonl(tmp_path / "dev.jsonl", [
        {"id": f"q{i}", "question": f"Which cells secrete hormone {i}?", "options": {"A": "Beta cells",
                                                                                     "B": "Alpha cells"},
         "answer": gold(i)} for i in range(60)])
    out = tmp_path / "fit"
    argv = ["fit", "--dataset", str(dataset), "--corpus", str(corpus), "--methods", "rag,oracle,misleader",
            "--trials", "1", "--skip-prompts", "--budget", "2", "--lm", "openai/m", "--api-base", "", "--api-key",
            "k", "--out", str(out)]
    with fake_openai(["m"], by_prompt=SAYS) as server:
        argv[argv.index("--api-base") + 1] = server.base()
        assert main(argv) == 0
        race_calls = server.completions
    raced = json.loads((out / "fit.json").read_text())["stages"]["race"]
    dropped = raced["dropped"]
    assert list(dropped) == ["misleader"] and dropped["misleader"]["behind"] == "oracle"
    at = dropped["misleader"]["question"]
    assert at <= 16 and raced["questions"]["misleader"] == at
    assert raced["survivors"] == ["rag", "oracle"]
    assert raced["questions"]["rag"] == raced["questions"]["oracle"] == raced["race_questions"] == 15  # validation
    assert (out / "candidates" / "oracle" / "artifact").is_dir() and not (out / "candidates" / "misleader").exists()
    rows = [json.loads(line) for line in (out / "race" / "results.jsonl").read_text().splitlines()]
    order = run_order(json.loads((out / "race" / "run.json").read_text()), rows)
    assert drops_in(rows, ["rag", "oracle", "misleader"], order, raced["alpha"], "rag") == dropped  # re-read alike
    report = (out / "report.md").read_text()
    assert "| misleader |" in report and "behind oracle" in report and "went on to tuning" in report
    with fake_openai(["m"], by_prompt=SAYS) as server:  # a finished fit asks nothing again
        argv[argv.index("--api-base") + 1] = server.base()
        assert main(argv) == 0 and server.completions == 0 < race_calls


def test_successive_elimination_drops_no_candidate_when_none_differs():
    """A/A: four candidates whose answers and beliefs are drawn from one distribution on 200 validation questions, in
    100 seeded draws; with alpha split over their six pairs, a drop (always a false one here) is rare."""
    import numpy as np

    rng = np.random.default_rng(7)
    methods, questions = ["rag", "b", "c", "d"], [f"q{i}" for i in range(200)]
    false_drops = 0
    for _ in range(100):
        rows = []
        for method in methods:
            for question in questions:
                p = float(rng.beta(2, 2))
                rows.append({"question_id": question, "method": method, "question_fingerprint": question,
                             "answer": "A" if rng.random() < p else "B", "gold": "A", "correct": False,
                             "option_logprobs": {"A": float(np.log(p)), "B": float(np.log(1 - p))},
                             "option_logprob_status": "ok"})
        for row in rows:
            row["correct"] = row["answer"] == row["gold"]
        false_drops += bool(drops_in(rows, methods, questions, 0.05, "rag"))
    assert false_drops / 100 <= 0.05
