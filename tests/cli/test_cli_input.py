"""Input is checked before any LM call, and a frozen artifact brings its own corpus and settings."""

from __future__ import annotations

import json

import pytest

from hyporag.cli import main
from hyporag.foundation.errors import DataError
from hyporag.questions.records import load_records
from tests.conftest import QUESTIONS, write_jsonl

ASK = ["ask", "--method", "cot", "--lm", "openai/none"]


@pytest.mark.parametrize("options", [["A=collections", "A=heapq", "B=bisect"], ["A=collections", "a=heapq"]])
def test_ask_refuses_a_letter_given_twice(options, capsys):
    argv = [*ASK, "--question", "Which module has a heap queue?"]
    for option in options:
        argv += ["--option", option]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "letter A was already given ('A=collections')" in err


def test_ask_refuses_an_empty_question(capsys):
    assert main([*ASK, "--question", "  ", "--option", "A=x", "--option", "B=y"]) == 2
    assert "--question: the question is empty" in capsys.readouterr().err


def test_dataset_rows_with_a_letter_twice_are_refused_with_file_and_line(tmp_path):
    path = tmp_path / "dup.jsonl"
    path.write_text('{"question": "Q1", "options": {"A": "x", "B": "y"}, "answer": "A"}\n'
                    '{"question": "Q2", "options": {"A": "x", "A": "z", "B": "y"}, "answer": "A"}\n')
    with pytest.raises(DataError, match=f"{path}:2: key 'A' appears twice"):
        load_records(path)
    path.write_text('{"question": "Q", "options": {"A": "x", "a": "z", "B": "y"}, "answer": "A"}\n')
    with pytest.raises(DataError, match=f"{path}:1: option letter A appears twice"):
        load_records(path)
    csv = tmp_path / "dup.csv"
    csv.write_text("question,A,a,B,answer\nQ,x,z,y,A\n")
    with pytest.raises(DataError, match="column\\(s\\) A appear twice"):
        load_records(csv)


def test_empty_question_field_names_file_line_and_field(tmp_path):
    path = write_jsonl(tmp_path / "q.jsonl", [QUESTIONS[0], {**QUESTIONS[1], "question": "   "}])
    with pytest.raises(DataError, match=f"{path}:2: field 'question' is missing or empty"):
        load_records(path)


def common(server, tmp_path):
    return ["--lm", "openai/test-model", "--api-base", f"http://127.0.0.1:{server.server_port}/v1",
            "--api-key", "k", "--no-cache"]


def test_program_brings_its_corpus_and_run_json_records_its_budget(server, tmp_path, tiny_corpus_dir,
                                                                   tiny_questions, capsys):
    dataset, artifact = str(tmp_path / "q.jsonl"), tmp_path / "chr-art"
    assert main(["tune", "--method", "chr", "--study", "s", "--trials", "1", "--dataset", dataset,
                 "--storage", str(tmp_path / "s.journal"), "--corpus", str(tiny_corpus_dir), "--budget", "2",
                 "--out", str(artifact), *common(server, tmp_path)]) == 0
    retrieval = json.loads((artifact / "manifest.json").read_text())["retrieval"]
    assert retrieval["corpus_spec"] == str(tiny_corpus_dir.resolve()) and retrieval["index_fingerprint"]
    out = tmp_path / "run"
    # no --corpus, no --budget: both come from the artifact, and run.json says what really ran
    assert main(["eval", "--program", str(artifact), "--dataset", dataset, "--out", str(out),
                 *common(server, tmp_path)]) == 0
    settings = json.loads((out / "run.json").read_text())
    assert settings["budget"] == 2 and settings["index_fingerprint"] == retrieval["index_fingerprint"]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and all(len(r["passage_ids"]) <= 2 and not r["error"] for r in rows)
    assert main(["ask", "--program", str(artifact), "--question", "Which cells secrete insulin?",
                 "--option", "A=Beta cells", "--option", "B=Alpha cells", *common(server, tmp_path)]) == 0
    # a setting that differs from the artifact's is refused in one line, before any call, naming the flag
    before = server.requests
    assert main(["eval", "--program", str(artifact), "--dataset", dataset, "--out", str(tmp_path / "run-b1"),
                 "--budget", "1", *common(server, tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--budget" in err and "frozen" in err and server.requests == before
    assert main(["eval", "--program", str(artifact), "--dataset", dataset, "--out", str(tmp_path / "run-b2"),
                 "--budget", "2", *common(server, tmp_path)]) == 0  # the artifact's own value is no conflict


@pytest.mark.parametrize(("toml", "where"), [('limit = "2"', "hyporag.toml: limit"),
                                            ("budget = 2.5", "hyporag.toml: budget"),
                                            ("limit = 0", "hyporag.toml: limit")])
def test_project_file_values_are_type_checked_and_named(tmp_path, monkeypatch, capsys, toml, where):
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    (tmp_path / "hyporag.toml").write_text(f'dataset = "q.jsonl"\n{toml}\n')
    assert main(["eval", "--methods", "cot", "--lm", "openai/none"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(f"hyporag: error: {tmp_path}/{where}: ")


def test_csv_with_a_bom_latin1_and_gzip_files(tmp_path):
    header, row = "id,question,A,B,answer\n", "q1,Which cells secrete insulin?,Beta cells,Alpha cells,A\n"
    bom = tmp_path / "excel.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + (header + row).encode())
    assert [e.id for e in load_records(bom).examples] == ["q1"]
    latin = tmp_path / "latin.csv"
    latin.write_bytes((header + row + "q2,Caf\xe9 au lait spots?,NF1,NF2,A\n").encode("latin-1"))
    with pytest.raises(DataError, match=f"{latin}:3: not UTF-8"):
        load_records(latin)
    import gzip

    packed = tmp_path / "q.jsonl"
    packed.write_bytes(gzip.compress(json.dumps(QUESTIONS[0]).encode()))
    with pytest.raises(DataError, match="gzip-compressed; decompress it first"):
        load_records(packed)
    bom_jsonl = tmp_path / "bom.jsonl"
    bom_jsonl.write_bytes(b"\xef\xbb\xbf" + json.dumps(QUESTIONS[0]).encode() + b"\n")
    assert [e.id for e in load_records(bom_jsonl).examples] == ["q1"]


def test_a_read_only_out_is_one_line_before_any_call(tmp_path, read_only_dir, server, capsys):
    dataset = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    code = main(["eval", "--dataset", str(dataset), "--methods", "cot", "--lm", "openai/m", "--api-base",
                 f"http://127.0.0.1:{server.server_port}/v1", "--api-key", "k", "--no-cache",
                 "--out", str(read_only_dir / "run")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0, err
    assert f"{read_only_dir / 'run'}: cannot write here" in err and server.requests == 0


def test_a_refused_setting_names_the_flag_a_user_types_and_infinity_is_no_number(capsys):
    from hyporag.foundation.errors import ConfigError
    from hyporag.programs.config import ProgramConfig

    with pytest.raises(ConfigError, match=r"^--answer: must be one of joint, per-passage"):
        ProgramConfig.from_dict({"answer_mode": "both"}, source="command line")  # not the --answer-mode no one has
    with pytest.raises(ConfigError, match="has no setting 'lam'"):
        ProgramConfig().replace(lam=2.0)  # refused, never dropped
    assert main(["eval", "--dataset", "x.jsonl", "--methods", "rag", "--answer", "per-passage", "--mix-temperature",
                 "inf", "--lm", "openai/m"]) == 2
    assert "--mix-temperature: must be a finite number, got inf" in capsys.readouterr().err
