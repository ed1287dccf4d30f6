"""The CLI: user errors are one line with exit status 2; data list names every dataset and corpus."""

from __future__ import annotations

import pytest

from hyporag.cli import main
from tests.conftest import SHARED


@pytest.mark.skipif(SHARED is None, reason="needs ../shared/data")
def test_data_list_prints_every_name_with_counts(capsys):
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    for name, count in [("medqa", 1273), ("medqa-dev", 1272), ("medmcqa", 4183), ("medcorp-local", 71376)]:
        assert any(line.split()[1] == name and line.split()[2] == str(count) for line in out.splitlines())


def test_bad_option_is_exit_2_one_line(capsys):
    assert main(["ask", "--question", "Q?", "--option", "A-x", "--option", "B=y", "--method", "cot"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "LETTER=TEXT" in err


def test_bad_dataset_file_is_exit_2_naming_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "Q", "options": {"A": "x", "B": "y"}, "answer": "A"}\n{oops\n')
    assert main(["eval", "--dataset", str(bad), "--methods", "cot", "--lm", "openai/none"]) == 2
    assert f"{bad}:2: not JSON" in capsys.readouterr().err


def test_unknown_local_model_is_exit_2(capsys):
    assert main(["ask", "--question", "Q?", "--option", "A=x", "--option", "B=y", "--method", "cot",
                 "--lm", "local:nope"]) == 2
    assert "unknown local model" in capsys.readouterr().err


def test_cli_keeps_ablation_presets_unless_overridden():
    from hyporag.cli import build_parser, run_config
    from hyporag.jobs.builders import build_program

    def program(method, *flags):
        args = build_parser().parse_args(["eval", "--dataset", "x", *flags])
        return build_program(method, run_config(args), object(), None)

    assert program("hcqr-no-options").retrieval_sees_options is False
    assert program("hcqr").retrieval_sees_options is True
    assert program("rag").retrieval_sees_options is False
    assert program("rag", "--options-visible").retrieval_sees_options is True
    assert program("hcqr-no-options", "--options-visible").retrieval_sees_options is True  # a flag beats a preset
    schedule = program("chr", "--schedule", "sigmoid", "--lam-max", "0.8").schedule
    assert schedule.kind == "sigmoid" and schedule.lam_max == 0.8
    assert program("chr-linear").schedule.kind == "linear"
    assert program("rag", "--lam", "0.5").budget == 15  # a flag of another method does not touch rag


def test_public_api_is_lazy_and_complete():
    import subprocess
    import sys

    code = ("import sys, hyporag; assert 'torch' not in sys.modules and 'faiss' not in sys.modules; "
            "[getattr(hyporag, n) for n in hyporag.__all__]; print('ok')")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "ok"


def test_demo_runs_the_evaluation_directly_with_its_settings(monkeypatch, capsys):
    import hyporag.cli.demo_command as demo
    from hyporag.cli import main
    from hyporag.jobs.evaluate import EvalReport

    seen = {}
    summary = [{"method": "rag", "accuracy": 0.5, "ci95_low": 0.3, "ci95_high": 0.7, "gold_in_context": 0.625,
                "seconds_per_q": 4.0}]
    done = EvalReport("runs/x", {"methods": summary}, 16)
    monkeypatch.setattr(demo, "evaluate", lambda config: seen.setdefault("config", config) and done)
    monkeypatch.setattr(demo, "markdown", lambda result: "FULL TABLES")  # demo imports it at module level
    assert main(["demo", "--out", "runs/x"]) == 0
    config = seen["config"]
    assert (config.data.dataset, ",".join(config.method_names), config.data.limit, config.control.out) == (
        "mmlu-med-dev", "cot,rag,chr", 16, "runs/x")
    assert config.program_settings["budget"] == 3
    printed = capsys.readouterr().out
    assert "FULL TABLES" in printed and printed.count("| rag |") == 1  # the full report, then one line per method
