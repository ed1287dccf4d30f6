"""Edges of the fourth trust pass, each a test that failed before: a judge asked for on a finished run, bars from
hyporag.toml, a Ray address nothing answers at, LiteLLM's price map, --version and --timeout's help, a stale
index's rebuild command, a tantivy index rebuilt in place, control characters from passages in `ask`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from dspy.utils import DummyLM

import hyporag
from hyporag.cli import build_parser, main
from hyporag.cli.common import load_settings
from hyporag.foundation.errors import ConfigError
from hyporag.jobs.evaluate import run_evaluation
from hyporag.jobs.settings import EvalSettings
from hyporag.lm.client import LMRoles
from hyporag.programs import make_program
from hyporag.programs.judge import ContextJudge
from hyporag.retrieval import build_index, load_corpus
from tests.conftest import PASSAGES, dummy_roles, write_jsonl


def test_dur_added_to_a_finished_run_judges_its_rows(tiny_retriever, tiny_questions, tmp_path):
    program = make_program("rag", retriever=tiny_retriever, roles=dummy_roles([{"answer": "B"}] * 9),
                           budget=2)
    run_evaluation({"rag": program}, tiny_questions, tmp_path / "run", {"dataset": "t"}, progress=False)
    judge_lm = DummyLM([{"label": "Useful", "reason": "mentions it"}] * 3)
    answer_lm = DummyLM([{"answer": "B"}] * 3)
    roles = LMRoles.from_lms(answer_lm, judge=judge_lm)
    program = make_program("rag", retriever=tiny_retriever, roles=roles, budget=2)
    report = run_evaluation({"rag": program}, tiny_questions, tmp_path / "run", {"dataset": "t", "dur": True},
                            progress=False, judge=ContextJudge(roles.judge))
    assert len(judge_lm.history) == 3 and report["methods"][0]["dur"] == 1.0  # not "–" with dur: true recorded


@pytest.mark.parametrize(("value", "message"), [('"high"', "an accuracy bar is a number"),
                                                ("55", r"0.55, not 55"), ("-1", r"in \[0, 1\]")])
def test_fail_under_from_the_project_file_is_checked_before_any_call(tmp_path, monkeypatch, value, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hyporag.toml").write_text(f"[eval]\nfail_under = {{ rag = {value} }}\n")
    with pytest.raises(ConfigError, match=message):
        load_settings(build_parser().parse_args(["eval"]), EvalSettings)
    with pytest.raises(ConfigError, match=message):
        EvalSettings(fail_under={"rag": json.loads(value)})


def test_embed_with_a_ray_address_nothing_answers_at_is_one_line_at_once(tmp_path, capsys):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'hyporag[ray]')")
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": i, "title": t, "contents": c} for i, t, c in PASSAGES])
    started = time.perf_counter()
    assert main(["embed", "--corpus", str(corpus), "--embedder", "hashing-64", "--out", str(tmp_path / "v"),
                 "--ray", "127.0.0.1:1"]) == 2
    assert time.perf_counter() - started < 30
    assert "nothing answers there" in capsys.readouterr().err.strip().splitlines()[-1]


def test_importing_hyporag_keeps_litellm_from_fetching_its_price_map():
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    code = "import os, hyporag; print(os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP'))"
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.strip() == "true"


def test_version_and_the_timeout_help(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"hyporag {hyporag.__version__}"
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    assert "600 for a server on 127.0.0.1" in " ".join(capsys.readouterr().out.split())


def test_a_stale_index_names_its_own_directory_and_a_rebuild_keeps_its_engine(tiny_corpus_dir, tmp_path, capsys):
    directory = tmp_path / "my-index"
    build_index(load_corpus(str(tiny_corpus_dir)), directory, retriever="bm25", progress=False, log=lambda m: None,
                bm25_engine="tantivy")
    write_jsonl(tiny_corpus_dir / "c.jsonl", [{"id": "new", "title": "t", "contents": "a new passage"}])
    assert main(["ask", "--question", "Which cells secrete insulin?", "--option", "A=Alpha", "--option", "B=Beta",
                 "--method", "rag", "--corpus", str(tiny_corpus_dir), "--index-dir", str(directory)]) == 2
    assert f"--index-dir {directory}" in capsys.readouterr().err
    build_index(load_corpus(str(tiny_corpus_dir)), directory, retriever="bm25", progress=False, log=lambda m: None)
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["parts"]["bm25"]["engine"] == "tantivy"  # rebuilt in place on the engine it had


def test_ask_prints_no_control_sequence_from_a_passage(tmp_path, capsys, monkeypatch):
    corpus = write_jsonl(tmp_path / "c.jsonl", [
        {"id": "evil", "title": "t", "contents": "insulin beta cells \x1b]52;c;aGVsbG8=\x07 \x1b[2J \x9b31m done"},
        *[{"id": i, "title": t, "contents": c} for i, t, c in PASSAGES]])
    lm = DummyLM([{"answer": "B"}])
    monkeypatch.setattr(LMRoles, "from_specs", classmethod(lambda cls, *a, **k: LMRoles.from_lms(lm)))
    for extra in ([], ["--json"]):
        assert main(["ask", "--question", "Which cells secrete insulin beta?", "--option", "A=Alpha", "--option",
                     "B=Beta", "--method", "rag", "--corpus", str(corpus), "--index-dir", str(tmp_path / "ix"),
                     *extra]) == 0
        out = capsys.readouterr().out
        assert "evil" in out and not any(c in out for c in "\x1b\x07\x9b")


def test_embed_joining_something_that_is_not_ray_stops_on_sigterm(tmp_path):
    """A port that accepts and says nothing passes the reachability probe; Ray's join then blocks in C++, where no
    signal reaches Python. The job waits for it in a helper thread and honours SIGTERM with one line."""
    import signal
    import socket

    pytest.importorskip("ray", reason="Ray is not installed (pip install 'hyporag[ray]')")
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "title": "t", "contents": "x y z"}])
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(5)
        log = tmp_path / "stderr.txt"
        with log.open("w") as handle:
            proc = subprocess.Popen([sys.executable, "-m", "hyporag.cli", "embed", "--corpus", str(corpus),
                                     "--embedder", "hashing-64", "--out", str(tmp_path / "v"), "--ray",
                                     f"127.0.0.1:{silent.getsockname()[1]}"],
                                    stdout=subprocess.DEVNULL, stderr=handle, text=True)
            deadline = time.time() + 120  # imports take a while on a loaded machine: wait until it is joining
            while "embedding" not in log.read_text() and time.time() < deadline and proc.poll() is None:
                time.sleep(0.2)
            time.sleep(3)
            assert proc.poll() is None  # still joining
            proc.send_signal(signal.SIGTERM)
            started = time.perf_counter()
            proc.wait(timeout=30)
    err = log.read_text()
    assert time.perf_counter() - started < 10 and proc.returncode == 128 + signal.SIGTERM, err[-800:]
    assert "stopped (SIGTERM) while joining the Ray cluster" in err.strip().splitlines()[-1]
