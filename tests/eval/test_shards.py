"""Sharded runs: three `--shard I/3` evaluations merged equal one unsharded run (rows, accuracy, intervals, McNemar,
cost), and shards that do not belong together are refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hyporag
from hyporag.cli import main
from hyporag.eval.shards import Shard
from hyporag.foundation.errors import ConfigError, HyporagError
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import EvalSettings
from hyporag.lm.client import LMRoles
from tests.conftest import CONTRAST, PASSAGES, SHARED, write_jsonl
from tests.optimizers.test_fit import SharedDummyLM

N = 12


def replies() -> dict:
    """The hypothesis for every question, then an answer per question (keyed by its text), so methods score
    differently across questions and the shards' answers do not depend on the order questions are asked in."""
    out: dict = {"[[ ## target_hypothesis ## ]]": dict(CONTRAST)}
    out.update({f"hormone {i}?": {"answer": "A" if i % 2 else "B"} for i in range(N)})
    return out


@pytest.fixture
def project(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": i, "title": t, "contents": c} for i, t, c in PASSAGES])
    questions = [{"id": f"q{i}", "question": f"Which cells secrete hormone {i}?",
                  "options": {"A": "Beta cells", "B": "Alpha cells"}, "answer": "A" if i % 3 else "B"}
                 for i in range(N)]
    dataset = write_jsonl(tmp_path / "dev.jsonl", questions)
    return RunConfig(dataset=str(dataset), corpus=str(corpus), methods="cot,rag,chr", seed=3,
                     program_settings={"budget": 2})


def run(config: RunConfig, out: Path, shard: str | None = None, **changes):
    roles = LMRoles.from_lms(SharedDummyLM(replies()))
    return hyporag.evaluate(config.replace(out=str(out), **changes), EvalSettings(shard=shard), roles=roles,
                            progress=False)


def untimed(value):
    """A row or report without its wall-clock fields (the one thing two runs of the same questions differ in)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items()
                if "seconds" not in k and k not in ("settings", "view", "plots")}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def rows(directory: Path) -> list[str]:
    return sorted(json.dumps(untimed(json.loads(line)), sort_keys=True)
                  for line in (directory / "results.jsonl").read_text().splitlines())


def test_three_shards_merged_equal_one_unsharded_run(project, tmp_path):
    full = run(project, tmp_path / "full")
    shards = [run(project, tmp_path / f"shard{i}", f"{i}/3") for i in (1, 2, 3)]
    assert [s.report["methods"][0]["n"] for s in shards] == [4, 4, 4]
    ids = [set(json.loads((tmp_path / f"shard{i}" / "run.json").read_text())["question_fingerprints"])
           for i in (1, 2, 3)]
    assert not (ids[0] & ids[1]) and not (ids[1] & ids[2]) and len(set().union(*ids)) == N
    merged = hyporag.merge_runs([tmp_path / "shard3", tmp_path / "shard1", tmp_path / "shard2"], tmp_path / "merged")
    assert rows(tmp_path / "merged") == rows(tmp_path / "full") and len(rows(tmp_path / "full")) == 3 * N
    assert untimed(merged) == untimed(full.report)  # accuracy, intervals, McNemar, evidence, cost (calls, tokens)
    assert {m["method"]: m["accuracy"] for m in merged["methods"]} != {}
    saved = json.loads((tmp_path / "merged" / "run.json").read_text())
    unsharded = json.loads((tmp_path / "full" / "run.json").read_text())
    assert "shard" not in saved and saved["n"] == N and saved["shards"] == 3
    assert list(saved["question_fingerprints"]) == list(unsharded["question_fingerprints"])  # the seeded order
    assert (tmp_path / "merged" / "report.html").is_file()
    hyporag.merge_runs([tmp_path / f"shard{i}" for i in (1, 2, 3)], tmp_path / "merged")  # an earlier merge: redone


def test_shards_that_do_not_belong_together_are_refused(project, tmp_path):
    for i in (1, 2, 3):
        run(project, tmp_path / f"s{i}", f"{i}/3")
    with pytest.raises(HyporagError, match=r"shard\(s\) 3/3 missing"):
        hyporag.merge_runs([tmp_path / "s1", tmp_path / "s2"], tmp_path / "m")
    with pytest.raises(HyporagError, match="given twice"):
        hyporag.merge_runs([tmp_path / "s1", tmp_path / "s1", tmp_path / "s2"], tmp_path / "m")
    other = run(project, tmp_path / "budget3", "3/3", program_settings={"budget": 3}).out
    with pytest.raises(HyporagError, match="budget3: its setting 'budget' differs"):
        hyporag.merge_runs([tmp_path / "s1", tmp_path / "s2", other], tmp_path / "m")
    fewer = run(project, tmp_path / "limit9", "3/3", limit=9).out
    with pytest.raises(HyporagError, match="limit9: its question list differs"):
        hyporag.merge_runs([tmp_path / "s1", tmp_path / "s2", fewer], tmp_path / "m")
    settings = json.loads((tmp_path / "s3" / "run.json").read_text())
    (tmp_path / "s3" / "run.json").write_text(json.dumps({**settings, "code_version": "0.0.1"}))
    with pytest.raises(HyporagError, match="s3: its code version differs"):
        hyporag.merge_runs([tmp_path / "s1", tmp_path / "s2", tmp_path / "s3"], tmp_path / "m")
    (tmp_path / "s3" / "run.json").write_text(json.dumps(settings))
    run(project, tmp_path / "full")
    with pytest.raises(HyporagError, match="full: exists and is not an earlier merge"):
        hyporag.merge_runs([tmp_path / "s1", tmp_path / "s2", tmp_path / "s3"], tmp_path / "full")
    with pytest.raises(HyporagError, match="full/run.json: not a shard"):
        hyporag.merge_runs([tmp_path / "full"], tmp_path / "m")
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("text", ["0/3", "4/3", "2", "a/b", "1/0"])
def test_a_bad_shard_is_one_line(text, capsys, tmp_path):
    with pytest.raises(ConfigError, match="shard"):
        Shard.parse(text)
    assert main(["eval", "--dataset", str(tmp_path / "q.jsonl"), "--shard", text]) == 2
    assert "shard" in capsys.readouterr().err.strip().splitlines()[-1]


def test_shards_cover_the_list_once():
    questions = list(range(10))
    parts = [Shard(i, 4).take(questions) for i in range(1, 5)]
    assert sorted(q for part in parts for q in part) == questions and parts[0] == [0, 4, 8]


@pytest.mark.skipif(SHARED is None, reason="needs ../shared/data (medqa)")
def test_a_sharded_reproduce_merges_cell_by_cell_into_the_unsharded_table(tmp_path, monkeypatch, capsys):
    lm = SharedDummyLM({"[[ ## answer ## ]]": {"reasoning": "Beta cells.", "answer": "A"}})
    monkeypatch.setattr(LMRoles, "from_specs", classmethod(lambda cls, *a, **k: LMRoles.from_lms(lm)))
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": i, "title": t, "contents": c} for i, t, c in PASSAGES])
    common = ["reproduce", "chr-table1", "--datasets", "medqa", "--methods", "cot", "--limit", "5",
              "--corpus", str(corpus)]
    assert main([*common, "--out", str(tmp_path / "full")]) == 0
    for i in (1, 2):
        assert main([*common, "--out", str(tmp_path / f"part{i}"), "--shard", f"{i}/2"]) == 0
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "part1" / "chr-table1"), str(tmp_path / "part2" / "chr-table1"),
                 "--out", str(tmp_path / "merged")]) == 0
    cell = "chr-table1/medqa-paper"
    assert rows(tmp_path / "merged" / cell) == rows(tmp_path / "full" / cell)
    assert len(rows(tmp_path / "full" / cell)) == 10  # 5 questions × cot and rag
    assert (tmp_path / "merged" / "chr-table1" / "table.md").read_text() == \
        (tmp_path / "full" / "chr-table1" / "table.md").read_text()
    assert main(["merge", str(tmp_path / "part1" / "chr-table1"), str(tmp_path / "full" / cell), "--out",
                 str(tmp_path / "m2")]) == 2
    assert "not both" in capsys.readouterr().err


def test_shards_cut_from_two_versions_of_one_dataset_are_refused(project, tmp_path):
    """Same ids, other questions: the list hash covers the questions' content, and a question two shards both
    answered must be the same question."""
    for i in (1, 2):
        run(project, tmp_path / f"s{i}", f"{i}/3")
    dataset = Path(project.data.dataset)
    edited = [json.loads(line) for line in dataset.read_text().splitlines()]
    edited[5]["answer"] = "A" if edited[5]["answer"] == "B" else "B"  # the gold of one question changed
    write_jsonl(dataset, edited)
    run(project, tmp_path / "s3", "3/3")
    with pytest.raises(HyporagError, match="s3: its question list differs"):
        hyporag.merge_runs([tmp_path / f"s{i}" for i in (1, 2, 3)], tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_a_hand_edited_correct_flag_is_rescored_from_answer_and_gold(project, tmp_path, capsys):
    for i in (1, 2, 3):
        run(project, tmp_path / f"s{i}", f"{i}/3")
    honest = hyporag.merge_runs([tmp_path / f"s{i}" for i in (1, 2, 3)], tmp_path / "honest")
    path = tmp_path / "s1" / "results.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    wrong = next(r for r in lines if r["method"] == "cot" and not r["correct"])
    wrong["correct"] = True  # flipped by hand: the answer still is not the gold
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    merged = hyporag.merge_runs([tmp_path / f"s{i}" for i in (1, 2, 3)], tmp_path / "m")
    accuracy = {m["method"]: m["accuracy"] for m in merged["methods"]}
    assert accuracy == {m["method"]: m["accuracy"] for m in honest["methods"]}
    assert "disagrees with their answer and gold" in capsys.readouterr().err
    from hyporag.eval.run_report import report_from_dir

    assert report_from_dir(tmp_path / "s1")["methods"][0]["accuracy"] == \
        run(project, tmp_path / "s1-again", "1/3").report["methods"][0]["accuracy"]


def test_a_refused_merge_leaves_the_earlier_merge_as_it_was(project, tmp_path):
    for i in (1, 2, 3):
        run(project, tmp_path / f"s{i}", f"{i}/3")
    hyporag.merge_runs([tmp_path / f"s{i}" for i in (1, 2, 3)], tmp_path / "m")
    before = {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir() if p.is_file()}
    with pytest.raises(HyporagError, match=r"shard\(s\) 3/3 missing"):
        hyporag.merge_runs([tmp_path / "s1", tmp_path / "s2"], tmp_path / "m")
    assert {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir() if p.is_file()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".m.")]  # no staging left behind


def test_a_run_holds_its_questions_so_view_and_merge_need_no_dataset(project, tmp_path):
    """Each run writes the questions it answered into its own directory; after the dataset file is gone, the viewer
    still shows their text and a merge of the shards still has every question, in the unsharded order."""
    shards = [tmp_path / f"s{i}" for i in (1, 2)]
    for i, shard in enumerate(shards, start=1):
        run(project, shard, f"{i}/2")
    kept = [json.loads(line) for line in (shards[0] / "questions.jsonl").read_text().splitlines()]
    assert kept and {"id", "question", "options", "gold", "fingerprint"} <= set(kept[0])
    Path(project.data.dataset).unlink()  # the run moved to another machine, or its dataset file did
    page = tmp_path / "page.html"
    assert main(["view", str(shards[0]), "--out", str(page)]) == 0
    html = page.read_text()
    assert kept[0]["question"] in html and "question text not shown" not in html
    assert main(["merge", *map(str, shards), "--out", str(tmp_path / "merged")]) == 0
    merged = [json.loads(line)["id"] for line in (tmp_path / "merged" / "questions.jsonl").read_text().splitlines()]
    order = list(json.loads((tmp_path / "merged" / "run.json").read_text())["question_fingerprints"])
    assert merged == order and len(merged) == N


def test_a_run_record_from_a_newer_hyporag_is_refused_by_every_reader(project, tmp_path, capsys):
    """run.json carries its schema; report, view and a resumed eval refuse a newer one in one line, never misread it
    and never rewrite it."""
    run(project, tmp_path / "r")
    record = json.loads((tmp_path / "r" / "run.json").read_text())
    assert record["schema"] == 2
    (tmp_path / "r" / "run.json").write_text(json.dumps({**record, "schema": 99}))
    for command in (["report", str(tmp_path / "r")], ["view", str(tmp_path / "r"), "--out", str(tmp_path / "p.html")]):
        capsys.readouterr()
        assert main(command) != 0
        err = capsys.readouterr().err.strip()
        assert "run schema 99 is newer than this hyporag reads (2)" in err and err.count("\n") == 0, command
    with pytest.raises(HyporagError, match="newer than this hyporag"):
        run(project, tmp_path / "r")
    assert json.loads((tmp_path / "r" / "run.json").read_text())["schema"] == 99


def test_a_markdown_page_escapes_every_value():
    from hyporag.eval.markdown_page import markdown_page

    page = markdown_page("# fit <b>\n\nRule: a < b & <script>x</script>\n\n| m | v |\n|---|---:|\n| <img src=x> | 1 |",
                         "t<", [("runs", 'a"b.html')])
    assert "<script>" not in page and "<img" not in page and "&lt;script&gt;" in page
    assert "<td>&lt;img src=x&gt;</td>" in page and 'href="a&quot;b.html"' in page


def test_shards_of_a_deciding_run_that_stop_at_different_questions_merge(project, tmp_path):
    """Each shard of an `--until-decided` run stops where its own questions decide it (here where each runs out:
    12 questions in 5 shards are 3, 3, 2, 2 and 2): the stops are per shard, the rule is one."""
    shards = [tmp_path / f"s{i}" for i in range(1, 6)]
    for index, out in enumerate(shards, start=1):
        roles = LMRoles.from_lms(SharedDummyLM(replies()))
        hyporag.evaluate(project.replace(out=str(out)), EvalSettings(shard=f"{index}/5", until_decided=True),
                         roles=roles, progress=False)
    stops = [json.loads((out / "run.json").read_text())["sequential"]["stopped_at"] for out in shards]
    assert stops == [3, 3, 2, 2, 2]
    report = hyporag.merge_runs(shards, tmp_path / "merged")
    merged = json.loads((tmp_path / "merged" / "run.json").read_text())
    assert merged["n"] == N and report["methods"][0]["n"] == N
    assert {s["stopped_at"] for s in merged["sequential"]["shard_stops"].values()} == {2, 3}
    assert "stopped_at" not in merged["sequential"] and merged["sequential"]["until_decided"] is True
    other = tmp_path / "other"
    roles = LMRoles.from_lms(SharedDummyLM(replies()))
    hyporag.evaluate(project.replace(out=str(other)), EvalSettings(shard="5/5", until_decided=True, alpha=0.1),
                     roles=roles, progress=False)
    with pytest.raises(HyporagError, match=r"its setting 'sequential' differs from .*\(alpha: 0\.05 against 0\.1\)|"
                                           r"\(alpha: 0\.1 against 0\.05\)"):
        hyporag.merge_runs([*shards[:4], other], tmp_path / "merged2")
