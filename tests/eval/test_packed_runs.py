"""A run's rows packed (gzip-compressed, as docs/results commits them): every reader reads them as the plain run,
`hyporag report --out` redraws its tables from them, nothing writes into a packed run, and unpacked it resumes."""

from __future__ import annotations

import gzip
import json

import pytest

import hyporag
from hyporag.cli import main
from hyporag.eval import pack, unpack
from hyporag.eval.run_report import report_from_dir
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.run_config import RunConfig
from tests.conftest import QUESTIONS, dummy_roles, write_jsonl


def evaluate(tmp_path, out, n: int):
    dataset = write_jsonl(tmp_path / "q.jsonl", QUESTIONS[:n])
    roles = dummy_roles([{"answer": "B"}] * 10)
    return hyporag.evaluate(RunConfig(dataset=str(dataset), methods="cot", out=str(out)), roles=roles,
                            progress=False)


def test_a_packed_run_reads_as_the_plain_one_and_is_never_written(tmp_path, capsys):
    evaluate(tmp_path, tmp_path / "run", 3)
    plain = report_from_dir(tmp_path / "run")
    written = pack(tmp_path / "run", tmp_path / "packed")
    assert sorted(p.name for p in written) == ["questions.jsonl.gz", "results.jsonl.gz", "run.json.gz"]
    assert pack(tmp_path / "run", tmp_path / "again")[0].read_bytes() == written[0].read_bytes()  # deterministic
    record = json.loads(gzip.decompress((tmp_path / "packed" / "run.json.gz").read_bytes()))
    assert record["dataset_source"] is None and record.get("index_dir") is None  # where this machine keeps them
    redrawn = report_from_dir(tmp_path / "packed", tmp_path / "drawn")
    assert redrawn["methods"] == plain["methods"] and (tmp_path / "drawn" / "summary.md").is_file()
    with pytest.raises(HyporagError, match="packed run"):
        report_from_dir(tmp_path / "packed")  # no --out: it would write beside committed evidence
    assert main(["report", str(tmp_path / "packed"), "--out", str(tmp_path / "cli")]) == 0
    assert (tmp_path / "cli" / "report.html").is_file()
    assert sorted(p.name for p in (tmp_path / "packed").iterdir()) == sorted(p.name for p in written)
    with pytest.raises(HyporagError, match="is a packed run"):
        evaluate(tmp_path, tmp_path / "packed", 3)  # resuming into it is refused: unpack first


def test_an_unpacked_run_resumes_where_it_stopped(tmp_path):
    evaluate(tmp_path, tmp_path / "run", 2)
    pack(tmp_path / "run", tmp_path / "packed")
    unpack(tmp_path / "packed", tmp_path / "elsewhere")
    with pytest.raises(HyporagError, match="holds a run already"):
        unpack(tmp_path / "packed", tmp_path / "elsewhere")
    report = evaluate(tmp_path, tmp_path / "elsewhere", 3)  # one more question: the two kept, one answered
    rows = [json.loads(line) for line in (tmp_path / "elsewhere" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and report.summary("cot").n == 3
