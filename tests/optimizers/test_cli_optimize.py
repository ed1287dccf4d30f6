"""compile → freeze → load → eval, and tune → freeze, from the CLI against a loopback OpenAI-compatible server."""

from __future__ import annotations

import json

from hyporag.cli import main


def common(server, tmp_path, tiny_corpus_dir):
    return ["--lm", "openai/test-model", "--api-base", f"http://127.0.0.1:{server.server_port}/v1",
            "--api-key", "k", "--no-cache", "--corpus", str(tiny_corpus_dir), "--index-dir", str(tmp_path / "ix"),
            "--budget", "2"]


def test_compile_freeze_eval_and_tune(server, tmp_path, tiny_corpus_dir, tiny_questions, capsys):
    args = common(server, tmp_path, tiny_corpus_dir)
    dataset = str(tmp_path / "q.jsonl")
    artifact = tmp_path / "chr-artifact"
    assert main(["compile", "--method", "chr", "--dataset", dataset, "--val-fraction", "0.34",
                 "--optimizer", "bootstrap", "--out", str(artifact), *args]) == 0
    manifest = json.loads((artifact / "manifest.json").read_text())
    assert manifest["splits"]["train_size"] == 2 and manifest["splits"]["val_size"] == 1
    assert manifest["optimizer"]["name"] == "bootstrap" and "after" in manifest["validation"]

    out = tmp_path / "run"
    assert main(["eval", "--program", str(artifact), "--dataset", dataset, "--out", str(out), *args]) == 0
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and all(r["method"] == "chr@chr-artifact" for r in rows)

    tuned = tmp_path / "tuned"
    assert main(["tune", "--method", "chr", "--study", "t1", "--trials", "2", "--dataset", dataset,
                 "--storage", str(tmp_path / "t1.journal"), "--out", str(tuned), *args]) == 0
    optimizer = json.loads((tuned / "manifest.json").read_text())["optimizer"]
    assert optimizer["name"] == "optuna-tpe"
    # The server answers "A" to everything, so every trial ties: the untuned program (enqueued as trial 0) wins.
    assert optimizer["best_params"]["schedule"] == "fixed" and optimizer["best_params"]["lam"] == 1.0
    assert main(["tune", "--method", "chr", "--study", "t1", "--trials", "3", "--dataset", dataset,
                 "--storage", str(tmp_path / "t1.journal"), *args]) == 0
    import optuna

    study = optuna.load_study(study_name="t1", storage=optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(tmp_path / "t1.journal"))))
    assert len(study.trials) == 3  # resumed: one more trial, not three new ones
    # each trial keeps its accuracy and belief whatever the objective (no logprobs here: no tie-break either)
    assert all(t.user_attrs["accuracy"] == t.value for t in study.trials)
    assert {t.user_attrs["with_probabilities"] for t in study.trials} == {0}  # the fake server returns none
    # the same study under another objective, budget or method would mix trial values: refused, naming what differs
    journal = ["--storage", str(tmp_path / "t1.journal")]
    capsys.readouterr()
    assert main(["tune", "--method", "chr", "--study", "t1", "--trials", "4", "--dataset", dataset,
                 "--objective", "log-p-gold", *journal, *args]) == 2
    assert "objective accuracy then, log-p-gold now" in capsys.readouterr().err
    assert main(["tune", "--method", "chr", "--study", "t1", "--trials", "4", "--dataset", dataset, *journal,
                 *args[:-1], "3"]) == 2
    assert "setting budget 2 then, 3 now" in capsys.readouterr().err
    assert main(["tune", "--method", "hcqr", "--study", "t1", "--trials", "4", "--dataset", dataset, *journal,
                 *args]) == 2
    assert "method chr then, hcqr now" in capsys.readouterr().err
    assert len(optuna.load_study(study_name="t1", storage=optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(tmp_path / "t1.journal")))).trials) == 3  # none added
    # another objective's value is on its own scale: said so, beside the trial's accuracy
    capsys.readouterr()
    assert main(["tune", "--method", "chr", "--study", "t3", "--trials", "1", "--dataset", dataset,
                 "--objective", "log-p-gold", "--storage", str(tmp_path / "t3.journal"), *args]) == 0
    assert "best trial 0: log-p-gold 0.000 (scaled 0–1; accuracy " in capsys.readouterr().out
    # --report reads a study back: it lists the trials, and a wrong name or journal is an error, never a new study
    capsys.readouterr()
    assert main(["tune", "--study", "t1", "--report", *journal]) == 0
    assert capsys.readouterr().out.count("trial ") == 3
    assert main(["tune", "--study", "t2", "--report", *journal]) == 2
    err = capsys.readouterr().err
    assert "no study named 't2'" in err and "it holds: t1" in err and len(err.strip().splitlines()) == 1
    assert main(["tune", "--study", "t1", "--report", "--storage", str(tmp_path / "missing.journal")]) == 2
    assert "no study journal at" in capsys.readouterr().err and not (tmp_path / "missing.journal").exists()


def test_compile_refuses_a_test_split(server, tmp_path, tiny_corpus_dir, capsys):
    code = main(["compile", "--method", "chr", "--dataset", "medqa", *common(server, tmp_path, tiny_corpus_dir)])
    assert code == 2 and "test split" in capsys.readouterr().err


def test_gepa_compile_is_bounded_and_records_its_reflection_lm(server, tmp_path, tiny_corpus_dir, tiny_questions):
    artifact = tmp_path / "chr-gepa"
    assert main(["compile", "--method", "chr", "--dataset", str(tmp_path / "q.jsonl"), "--val-fraction", "0.34",
                 "--optimizer", "gepa", "--max-metric-calls", "6", "--reflection-lm", "openai/reflector",
                 "--out", str(artifact), *common(server, tmp_path, tiny_corpus_dir)]) == 0
    manifest = json.loads((artifact / "manifest.json").read_text())
    assert manifest["optimizer"]["reflection_lm"] == "openai/reflector"
    assert manifest["optimizer"]["max_metric_calls"] == 6 and manifest["optimizer"]["auto"] is None
    phases = manifest["cost"]["by_phase"]
    assert phases["optimizer"]["calls"] > 0 and phases["validation"]["calls"] > 0
