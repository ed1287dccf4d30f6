"""The evaluation runner: rows per (question, method), resume without recomputation, lock, torn-line recovery."""

from __future__ import annotations

import json
import os

import pytest
from dspy.utils import DummyLM

from hyporag.eval.results_store import ResultsStore
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.evaluate import run_evaluation
from hyporag.lm.client import LMRoles
from hyporag.programs import make_program
from tests.conftest import dummy_roles

SETTINGS = {"dataset": "tiny", "lms": {"answer": "dummy"}, "budget": 2}


def programs(answers):
    lm = DummyLM([{"answer": a} for a in answers])
    return {"cot": make_program("cot", roles=LMRoles.from_lms(lm))}, lm


def test_rows_summary_and_resume(tiny_questions, tmp_path):
    progs, lm = programs(["B", "A", "A"])
    summary = run_evaluation(progs, tiny_questions, tmp_path / "run", SETTINGS, progress=False)["methods"]
    assert summary[0]["n"] == 3 and summary[0]["accuracy"] == pytest.approx(2 / 3)
    assert {p.name for p in (tmp_path / "run").iterdir()} >= {"summary.json", "summary.md", "summary.csv",
                                                               "accuracy.png", "results.jsonl", "run.json"}
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert {r["question_id"] for r in rows} == {"q1", "q2", "q3"} and all(r["calls"] == 1 for r in rows)
    progs, lm = programs([])
    run_evaluation(progs, tiny_questions, tmp_path / "run", SETTINGS, progress=False)
    assert lm.history == []  # nothing recomputed


def test_torn_last_line_is_dropped_and_redone(tiny_questions, tmp_path):
    progs, _ = programs(["B", "C", "A"])
    run_evaluation(progs, tiny_questions, tmp_path / "run", SETTINGS, progress=False)
    path = tmp_path / "run" / "results.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2]) + lines[2][: len(lines[2]) // 2])  # what kill -9 mid-write leaves
    progs, lm = programs(["A"])
    summary = run_evaluation(progs, tiny_questions, tmp_path / "run", SETTINGS, progress=False)["methods"]
    assert len(lm.history) == 1 and summary[0]["n"] == 3
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_failing_question_is_recorded_not_fatal(tiny_questions, tmp_path):
    class Boom:
        def __call__(self, question, options):
            if "insulin" in question:
                raise RuntimeError("backend down")
            return make_program("cot", roles=dummy_roles([{"answer": "C"}]))(question=question,
                                                                                           options=options)

    summary = run_evaluation({"cot": Boom()}, tiny_questions, tmp_path / "run", SETTINGS, progress=False)["methods"]
    assert summary[0]["errors"] == 1 and summary[0]["n"] == 3


def test_second_live_writer_is_refused(tmp_path):
    refused = pytest.raises(HyporagError, match=f"another evaluation \\(pid {os.getpid()}\\)")
    with ResultsStore(tmp_path / "run", SETTINGS), refused, ResultsStore(tmp_path / "run", SETTINGS):
        pass
    with ResultsStore(tmp_path / "run", SETTINGS) as store:  # released on exit
        assert store.rows == []


def test_lock_left_by_a_killed_run_is_free(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / ".lock").write_text("999999999")  # what a run killed before the flock era left behind
    (tmp_path / "run" / ".lock.owner").write_text("999999999")
    with ResultsStore(tmp_path / "run", SETTINGS) as store:
        assert store.rows == []


def test_a_takeover_cannot_steal_a_lock_held_by_a_live_run(tmp_path):
    """The race of two takeovers, made deterministic: run B read the stale pid before run A took the lock, so B
    acts on what it read. A lock judged by the pid written in a file lets B in beside A; a kernel lock does not."""
    with ResultsStore(tmp_path / "run", SETTINGS):  # run A holds the lock
        (tmp_path / "run" / ".lock").write_text("999999999")  # what B saw: a dead writer's pid
        with pytest.raises(HyporagError, match="another evaluation"), ResultsStore(tmp_path / "run", SETTINGS):
            pass


TAKE_LOCK = r"""
import sys, time
from hyporag.foundation.errors import HyporagError
from hyporag.eval.results_store import ResultsStore
directory, go = sys.argv[1], float(sys.argv[2])
while time.time() < go:
    pass
try:
    with ResultsStore(directory, {"dataset": "tiny"}):
        print("won", flush=True)
        time.sleep(1.5)
except HyporagError:
    print("refused", flush=True)
"""


def test_two_runs_taking_over_a_stale_lock_at_once_cannot_both_win(tmp_path):
    import subprocess
    import sys
    import time

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / ".lock").write_text("999999999")
    go = str(time.time() + 2.0)  # both start their takeover at the same instant
    procs = [subprocess.Popen([sys.executable, "-c", TAKE_LOCK, str(tmp_path / "run"), go], stdout=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outcomes = sorted(p.communicate(timeout=60)[0].strip() for p in procs)
    assert outcomes == ["refused", "won"]


def test_changed_settings_are_refused(tmp_path):
    with ResultsStore(tmp_path / "run", SETTINGS):
        pass
    with pytest.raises(HyporagError, match="different budget"), ResultsStore(tmp_path / "run", {**SETTINGS,
                                                                                               "budget": 9}):
        pass


def test_a_resume_on_another_bm25_engine_is_refused_and_older_runs_count_as_bm25s(tmp_path):
    older = {**SETTINGS, "retriever": "bm25"}  # run.json from before the engine was recorded
    with ResultsStore(tmp_path / "run", older):
        pass
    with ResultsStore(tmp_path / "run", {**older, "bm25_engine": "bm25s"}):
        pass
    with pytest.raises(HyporagError, match="different bm25_engine"), ResultsStore(
            tmp_path / "run", {**older, "bm25_engine": "tantivy"}):
        pass
    from hyporag.eval.run_report import markdown

    report = {"settings": {**older, "bm25_engine": "tantivy"}, "methods": [], "utility_conditioned_accuracy": {},
              "top5_overlap_on_disagreements": []}
    assert "BM25 engine: tantivy (bm25 retrieval, exact search)." in markdown(report)  # where passages came from
    with ResultsStore(tmp_path / "cot", SETTINGS):  # a run without retrieval has no engine, then as now
        pass
    with ResultsStore(tmp_path / "cot", {**SETTINGS, "bm25_engine": None}):
        pass


def test_report_of_a_partial_run_covers_only_questions_every_method_finished(tiny_questions, tmp_path, capsys):
    from hyporag.cli import main

    lm = DummyLM([{"answer": a} for a in ["B", "A", "A", "B", "B"]])
    progs = {m: make_program("cot", roles=LMRoles.from_lms(lm)) for m in ("cot", "rag")}
    settings = {**SETTINGS, "n": 3, "methods": ["cot", "rag"]}
    run_evaluation(progs, tiny_questions, tmp_path / "run", settings, progress=False)
    path = tmp_path / "run" / "results.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    rows = [json.loads(line) for line in lines]
    dropped = next(i for i, r in enumerate(rows) if r["method"] == "rag")  # as if the run stopped before it
    path.write_text("".join(line for i, line in enumerate(lines) if i != dropped) + '{"torn')
    assert main(["report", str(tmp_path / "run")]) == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    coverage = summary["coverage"]
    assert {k: coverage[k] for k in ("questions_complete", "questions_planned", "rows")} == {
        "questions_complete": 2, "questions_planned": 3, "rows": 5}
    # mid-run, each method's own rows so far are shown beside the paired tables
    assert {m: p["rows"] for m, p in coverage["per_method"].items()} == {"cot": 3, "rag": 2}
    assert [s["n"] for s in summary["methods"]] == [2, 2]
    assert "Partial run" in (tmp_path / "run" / "summary.md").read_text()
    assert path.read_text().endswith('{"torn')  # read-only: a live run's file is never truncated by a report
    assert main(["report", str(tmp_path / "nowhere")]) == 2
    assert "not found" in capsys.readouterr().err


def test_a_method_added_to_a_results_dir_keeps_the_earlier_rows_and_their_record(tiny_questions, tmp_path, capsys):
    """Adding hcqr to a finished cot,rag run answers only hcqr; the dir's report covers all three, and run.json
    still records the settings every earlier row was answered with."""
    from hyporag.cli import main
    from hyporag.jobs.evaluate import settings_of

    def settings_for(progs):
        return {**SETTINGS, "n": 3, "methods": list(progs), "program": {m: settings_of(p) for m, p in progs.items()}}

    lm = DummyLM([{"answer": a} for a in ["B", "A", "A", "B", "B", "C"]])
    first = {m: make_program("cot", roles=LMRoles.from_lms(lm)) for m in ("cot", "rag")}
    run_evaluation(first, tiny_questions, tmp_path / "run", settings_for(first), progress=False)
    added_lm = DummyLM([{"answer": a} for a in ["A", "A", "A"]])
    added = {"hcqr": make_program("cot", roles=LMRoles.from_lms(added_lm))}
    report = run_evaluation(added, tiny_questions, tmp_path / "run", settings_for(added), progress=False)
    # only hcqr was answered, and what the run returns and writes covers all three (as `hyporag report` would)
    assert [s["method"] for s in report["methods"]] == ["cot", "rag", "hcqr"] and len(added_lm.history) == 3
    recorded = json.loads((tmp_path / "run" / "run.json").read_text())
    assert recorded["methods"] == ["cot", "rag", "hcqr"] and set(recorded["program"]) == {"cot", "rag", "hcqr"}
    assert main(["report", str(tmp_path / "run")]) == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [s["method"] for s in summary["methods"]] == ["cot", "rag", "hcqr"] and "coverage" not in summary
    # the same method with other settings is refused, naming it and the field: its rows would mix
    other = {"rag": make_program("cot", roles=LMRoles.from_lms(DummyLM([])), budget=7)}
    with pytest.raises(HyporagError, match=r"holds rag rows answered with other settings \(budget\)"):
        run_evaluation(other, tiny_questions, tmp_path / "run", settings_for(other), progress=False)
