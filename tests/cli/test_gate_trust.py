"""The CI gate trusted only where it can be: a baseline that pairs on too few questions fails the gate (or is refused
before any call), a missing or empty baseline is refused before the first LM call with the JUnit file rewritten,
each equivalence margin is bounded by its measure's range, and the JUnit file holds every case it counts."""

from __future__ import annotations

import pytest

from hyporag.cli import main
from hyporag.testing import fake_openai, write_jsonl

QUESTIONS = [{"id": f"q{i}", "question": f"Which cells secrete hormone {i}?",
              "options": {"A": "Beta cells", "B": "Alpha cells"}, "answer": "A"} for i in range(30)]
OTHER_DOMAIN = [{"id": f"s{i}", "question": f"Which system call opens file {i}?",
                 "options": {"A": "open", "B": "close"}, "answer": "A"} for i in range(30)]


def argv(base: str, dataset, out, *extra: str) -> list[str]:
    return ["eval", "--dataset", str(dataset), "--methods", "cot", "--lm", "openai/m", "--api-base", base,
            "--api-key", "k", "--no-cache", "--out", str(out), *extra]


def test_a_baseline_of_other_questions_is_refused_before_any_call_and_the_junit_says_so(tmp_path, capsys):
    medical = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    syscalls = write_jsonl(tmp_path / "s.jsonl", OTHER_DOMAIN)
    junit = tmp_path / "gate.xml"
    junit.write_text('<testsuite tests="1" failures="0"><testcase name="cot"/></testsuite>')  # an earlier pass
    with fake_openai(["m"]) as server:
        assert main(argv(server.base(), syscalls, tmp_path / "other")) == 0
        served = server.completions
        code = main(argv(server.base(), medical, tmp_path / "new", "--against", str(tmp_path / "other"),
                         "--junit", str(junit)))
        assert server.completions == served  # refused before the first call
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and "answered 0 of this run's 30 questions, fewer than the 10 a comparison needs" in err
    assert 'errors="1"' in junit.read_text() and "answered 0 of this run" in junit.read_text()


@pytest.mark.parametrize("baseline", ["missing", "empty", "corrupt"])
def test_a_missing_empty_or_corrupt_baseline_is_refused_before_any_call(tmp_path, baseline, capsys):
    medical = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    where = tmp_path / "old"
    if baseline == "empty":
        where.mkdir()
    elif baseline == "corrupt":
        where.mkdir()
        (where / "run.json").write_text("{not json")
        (where / "results.jsonl").write_text("")
    junit = tmp_path / "gate.xml"
    with fake_openai(["m"]) as server:
        code = main(argv(server.base(), medical, tmp_path / "new", "--against", str(where), "--junit", str(junit)))
        assert server.completions == 0
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and str(where) in err
    assert 'errors="1"' in junit.read_text()


def test_compare_refuses_runs_that_pair_on_too_few_questions(tmp_path):
    import hyporag
    from hyporag.foundation.errors import HyporagError

    with fake_openai(["m"]) as server:
        assert main(argv(server.base(), write_jsonl(tmp_path / "q.jsonl", QUESTIONS), tmp_path / "a")) == 0
        assert main(argv(server.base(), write_jsonl(tmp_path / "s.jsonl", OTHER_DOMAIN), tmp_path / "b")) == 0
    with pytest.raises(HyporagError, match=r"pair on 0 question\(s\) at most \(a comparison needs 10\)"):
        hyporag.compare(tmp_path / "a", tmp_path / "b")


@pytest.mark.parametrize(("flags", "said"), [
    (["--delta", "1.5"], "--delta: accuracy differences lie in [-1, 1], so an equivalence margin must be above 0 and "
                         "below 1, got 1.5"),
    (["--delta", "5"], "got 5; 5 looks like a percentage: give 0.05"),
    (["--decide-on", "log_p_gold_clipped", "--delta", "7"], "log p(gold) (clipped at -5) differences lie in [-5, 5]"),
    (["--decide-on", "nonsense"], "--decide-on: no deciding measure 'nonsense'"),
])
def test_an_equivalence_margin_outside_its_measures_range_is_refused_in_one_line(tmp_path, flags, said, capsys):
    dataset = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    code = main(argv("http://127.0.0.1:9/v1", dataset, tmp_path / "x", "--until-decided", "--decide-on", "accuracy",
                     *flags))
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and said in err, err


def test_the_junit_file_holds_the_per_method_cases_the_gate_cases_and_every_failure_it_counts(tmp_path):
    """rag is new (not in the old run) and below its bar: its failing case is in the file beside cot's gate case
    and cot's own case with its interval; `failures` counts exactly the failed cases."""
    dataset = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "p1", "title": "t", "contents": "Beta cells."}])
    junit = tmp_path / "gate.xml"
    with fake_openai(["m"], by_prompt={"[1]": ({"answer": "B"}, None)}) as server:  # rag reads a passage: wrong
        assert main(argv(server.base(), dataset, tmp_path / "release")) == 0
        code = main(["eval", "--dataset", str(dataset), "--methods", "cot,rag", "--corpus", str(corpus), "--lm",
                     "openai/m", "--api-base", server.base(), "--api-key", "k", "--no-cache", "--out",
                     str(tmp_path / "today"), "--against", str(tmp_path / "release"), "--fail-if-worse", "0",
                     "--fail-under", "rag=0.5", "--junit", str(junit)])
    xml = junit.read_text()
    assert code == 1
    assert '<testcase classname="hyporag-eval-q" name="cot" ' in xml and "ci95=[" in xml
    rag = next(line for line in xml.splitlines() if 'name="rag"' in line)
    assert "<failure message=\"accuracy 0.000 &lt; 0.500\"/>" in rag
    gate = next(line for line in xml.splitlines() if 'name="cot vs ' in line)
    assert "outcome=" in gate and "<failure" not in gate
    assert xml.count("<failure") == 1 and 'failures="1"' in xml and 'tests="3"' in xml
