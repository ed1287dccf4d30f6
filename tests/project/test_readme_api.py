"""The README's Python API example, run as written with DummyLM in every role: index → fit → evaluate → load the
frozen program → ask. (tests/test_local_lm.py runs the same block on the embedded model.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import hyporag
from hyporag.lm.client import LMRoles
from tests.conftest import SHARED
from tests.optimizers.test_fit import REPLIES, SharedDummyLM

pytestmark = pytest.mark.skipif(SHARED is None, reason="needs ../shared/data (mmlu-med-dev, openstax)")


def readme_block() -> str:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    return re.search(r"## Python API.*?```python\n(.*?)```", readme, re.S).group(1)


def test_readme_api_runs_as_written_with_dummy_lms(tmp_path, monkeypatch, capsys):
    lm = SharedDummyLM(dict(REPLIES))
    monkeypatch.setattr(LMRoles, "from_specs", classmethod(lambda cls, *a, **k: LMRoles.from_lms(lm)))
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(readme_block(), "README.md", "exec"), scope)  # noqa: S102 - the README's own example
    fit_state = json.loads((tmp_path / "runs" / "api-fit" / "fit.json").read_text())
    assert {"index", "split", "tune", "freeze", "evaluate"} <= set(fit_state["stages"])
    assert (tmp_path / "runs" / "api-fit" / "artifact" / "manifest.json").is_file()
    rows = [json.loads(line) for line in (tmp_path / "runs" / "api-eval" / "results.jsonl").open()]
    assert len(rows) == 2 and all(r["method"].startswith("chr@") and r["answer"] == "A" for r in rows)
    assert isinstance(scope["program"], hyporag.CHR) and scope["pred"].answer == "A"
    assert len(scope["pred"].passages) == 3  # the frozen budget
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1].startswith("A [") and printed[-1].endswith(" 2")  # answer, passage ids, 2 LM calls
