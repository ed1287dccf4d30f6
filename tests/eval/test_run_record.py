"""The run record is the contract between the engine and everything that reads a run: the summary files and the
page are drawn from a run directory alone (copied elsewhere, its dataset and index gone), exactly as the evaluation
that wrote it drew them; the engine itself writes the record and nothing else."""

from __future__ import annotations

import json
import re
import shutil

import hyporag
from hyporag.eval.engine import record_run
from hyporag.eval.run_report import report_from_dir
from hyporag.eval.viewer import ROW_FIELDS, write_view
from hyporag.jobs.run_config import RunConfig
from hyporag.programs import make_program
from hyporag.testing import fake_openai
from tests.conftest import QUESTIONS, dummy_roles, write_jsonl


def test_the_report_and_page_come_from_the_run_directory_alone(tiny_corpus_dir, tmp_path):
    dataset = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    with fake_openai(["m"], letter_logprobs={"A": -0.2, "B": -1.9, "C": -3.0, "D": -4.0}) as server:
        written = hyporag.evaluate(RunConfig(dataset=str(dataset), methods="cot,rag", out=str(tmp_path / "run"),
                                             corpus=str(tiny_corpus_dir), lm="openai/m", api_base=server.base(),
                                             api_key="k", no_cache=True, budget=2), progress=False)
    moved = tmp_path / "elsewhere" / "run"
    shutil.copytree(tmp_path / "run", moved)
    shutil.rmtree(tiny_corpus_dir)
    dataset.unlink()
    for name in ("summary.json", "summary.md", "summary.csv", "report.html"):
        (moved / name).unlink()
    redrawn = report_from_dir(moved)
    assert redrawn["methods"] == written.report["methods"] and redrawn["decision"] == written.report["decision"]
    page = write_view([moved]).read_text()
    data = json.loads(re.search(r'id="data">(.*?)</script>', page, re.S).group(1))["runs"][0]
    assert data["questions"]["q1"]["question"] == QUESTIONS[0]["question"]  # from the run's own questions.jsonl
    assert set(data["rows"][0]) == set(ROW_FIELDS) and "option_logprobs" in ROW_FIELDS


def test_the_engine_writes_the_record_and_no_report(tiny_questions, tmp_path):
    program = make_program("cot", roles=dummy_roles([{"answer": "B"}] * 3))
    record = record_run({"cot": program}, tiny_questions, tmp_path / "run", {"dataset": "tiny"}, progress=False)
    assert {p.name for p in (tmp_path / "run").iterdir()} >= {"results.jsonl", "questions.jsonl", "run.json"}
    assert not any((tmp_path / "run" / n).exists() for n in ("summary.json", "summary.md", "report.html"))
    assert record.methods == ["cot"] and len(record.rows) == 3
