"""`fit --max-minutes`: every stage of a candidate (its tune and compile too) is a place to stop; the stop is one
line and its own exit status (7), never a traceback about a report not yet written; the plan says beforehand when
the limit cannot be met; the same command resumes."""

from __future__ import annotations

import json
import time

import pytest

from hyporag.cli import main
from hyporag.jobs.fit_candidates import cost_estimate
from hyporag.jobs.settings import FitSettings
from tests.conftest import PASSAGES, chr_replies, write_jsonl


@pytest.fixture
def project(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": i, "title": t, "contents": c} for i, t, c in PASSAGES])
    dataset = write_jsonl(tmp_path / "dev.jsonl", [
        {"id": f"q{i}", "question": f"Which cells secrete hormone {i}?",
         "options": {"A": "Beta cells", "B": "Alpha cells"}, "answer": "A" if i % 3 else "B"} for i in range(12)])
    return dataset, corpus


def argv(base: str, dataset, corpus, out, *extra: str) -> list[str]:
    return ["fit", "--dataset", str(dataset), "--corpus", str(corpus), "--methods", "rag,chr", "--trials", "1",
            "--skip-prompts", "--budget", "2", "--lm", "openai/m", "--api-base", base, "--api-key", "k",
            "--out", str(out), *extra]


def clock_ticking(monkeypatch, minutes_per_reading: float) -> None:
    """Every reading of the fit's clock is `minutes_per_reading` later than the last."""
    now = [time.monotonic()]

    def tick() -> float:
        now[0] += minutes_per_reading * 60
        return now[0]

    monkeypatch.setattr("hyporag.jobs.fit_plan.time.monotonic", tick)


def test_a_stop_inside_a_candidate_is_one_line_exit_7_and_the_same_command_resumes(project, tmp_path, capsys,
                                                                                   monkeypatch):
    from hyporag.testing import fake_openai

    dataset, corpus = project
    out = tmp_path / "fit"
    clock_ticking(monkeypatch, 0.1)
    with fake_openai(["m"], reply={"answer": "A", **chr_replies()["[[ ## target_hypothesis ## ]]"]}) as server:
        assert main(argv(server.base(), dataset, corpus, out, "--max-minutes", "0.45")) == 7
        err = capsys.readouterr().err
        assert "Traceback" not in err and not (out / "report.md").exists()
        last = err.strip().splitlines()[-1]
        assert last.startswith("fit: stopped: --max-minutes 0.45 reached before candidate rag's ") and "resume" in last
        assert "tune" in last or "split" in last  # a candidate's own stage, not only the gap between candidates
        assert json.loads((out / "fit.json").read_text())["stopped"] in last
        monkeypatch.undo()
        assert main(argv(server.base(), dataset, corpus, out)) == 0
    assert (out / "report.md").is_file() and "stopped" not in json.loads((out / "fit.json").read_text())


def test_the_plan_says_when_the_limit_cannot_be_met():
    settings = FitSettings(methods=("rag", "chr"), out="x", trials=2, max_minutes=5)
    sizes = {"train": 10, "val": 10, "heldout": 10}
    assert "--max-minutes 5 cannot be met" in cost_estimate(["rag", "chr"], sizes, settings, (10.0, 4), 4)["text"]
    assert "cannot be met" not in cost_estimate(["rag", "chr"], sizes, settings, (0.01, 4), 4)["text"]
    assert "is unknown until" in cost_estimate(["rag", "chr"], sizes, settings, None, 4)["text"]
