"""`eval --against RUN_DIR [--fail-if-worse D]` and `hyporag.compare`: each method against itself in an earlier run,
paired by question; exit 1 only when the new run is worse beyond D with the error guarantee; a JUnit case per
method carries the interval."""

from __future__ import annotations

import hyporag
from hyporag.cli import main
from hyporag.testing import fake_openai, write_jsonl

QUESTIONS = [{"id": f"q{i}", "question": f"Which cells secrete hormone {i}?",
              "options": {"A": "Beta cells", "B": "Alpha cells"}, "answer": "A"} for i in range(40)]


def argv(base: str, dataset, out, *extra: str) -> list[str]:
    return ["eval", "--dataset", str(dataset), "--methods", "cot", "--lm", "openai/m", "--api-base", base,
            "--api-key", "k", "--no-cache", "--out", str(out), *extra]


def test_a_regression_fails_the_gate_and_an_unchanged_run_passes(tmp_path, capsys):
    dataset = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    junit = tmp_path / "gate.xml"
    with fake_openai(["m"], reply={"answer": "A"}) as good, fake_openai(["m"], reply={"answer": "B"}) as bad:
        assert main(argv(good.base(), dataset, tmp_path / "release")) == 0
        assert main(argv(good.base(), dataset, tmp_path / "same", "--against", str(tmp_path / "release"),
                         "--fail-if-worse", "0", "--junit", str(junit))) == 0
        assert 'failures="0"' in junit.read_text() and "cot vs" in junit.read_text()
        capsys.readouterr()
        code = main(argv(bad.base(), dataset, tmp_path / "today", "--against", str(tmp_path / "release"),
                         "--fail-if-worse", "0.5", "--junit", str(junit)))
    printed = capsys.readouterr()
    assert code == 1 and "worse than --against" in printed.err and "accuracy worse than the old run" in printed.err
    assert "Against" in printed.out and "| cot | 40 |" in printed.out
    xml = junit.read_text()
    assert 'failures="1"' in xml and "sequence=[-1.0000," in xml
    result = hyporag.compare(tmp_path / "today", tmp_path / "release")
    cot = result["comparisons"]["cot"]
    assert cot["outcome"] == "worse" and cot["decided_at"] < 40 and cot["fixed_n"]["accuracy"]["difference"] == -1.0


def test_fail_if_worse_needs_a_run_to_compare_with(tmp_path, capsys):
    dataset = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    assert main(argv("http://127.0.0.1:9/v1", dataset, tmp_path / "x", "--fail-if-worse", "0")) == 2
    assert "--fail-if-worse: needs --against" in capsys.readouterr().err
