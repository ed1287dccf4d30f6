"""The run viewer: report.html after every evaluation, self-contained, opened in a real headless Chromium where
one is installed (Debian's `chromium` + `chromium-driver`; skipped with the reason otherwise)."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from dspy.utils import DummyLM

from hyporag.eval.viewer import write_view
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.evaluate import run_evaluation
from hyporag.lm.client import LMRoles
from hyporag.programs.baselines import CoT, SimpleRAG
from tests.conftest import dummy_roles


def two_method_run(tiny_retriever, tiny_questions, out):
    """rag right on all three; cot wrong on q1 and q3: 'rag right, cot wrong' must show exactly q1 and q3."""
    rag = SimpleRAG(retriever=tiny_retriever, roles=dummy_roles([{"answer": a} for a in "BCA"]),
                    budget=3)
    cot = CoT(roles=dummy_roles([{"answer": a} for a in "ACB"]))
    settings = {"dataset": "tiny", "index_dir": str(tiny_retriever.directory), "methods": ["rag", "cot"]}
    return run_evaluation({"rag": rag, "cot": cot}, tiny_questions, out, settings, progress=False)


def test_every_evaluation_writes_a_self_contained_view(tiny_retriever, tiny_questions, tmp_path):
    report = two_method_run(tiny_retriever, tiny_questions, tmp_path / "run")
    html = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert report["view"] == str(tmp_path / "run" / "report.html")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing fetched from the network
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S).group(1))
    run = data["runs"][0]
    assert {r["question_id"] for r in run["rows"]} == {"q1", "q2", "q3"} and run["methods"] == ["rag", "cot"]
    assert run["questions"]["q1"]["options"]["B"] == "Beta cells"
    retrieved = {p for r in run["rows"] for p in r["passage_ids"]}
    assert retrieved and retrieved <= set(run["passages"])  # each retrieved passage's text, once
    assert all(len(r["passage_scores"]) == len(r["passage_ids"]) for r in run["rows"])
    assert {r["question_id"]: r["answer_reply"] for r in run["rows"] if r["method"] == "cot"} == \
        {"q1": "A", "q2": "C", "q3": "B"}  # the reply as the LM wrote it, for the question page


def test_a_folder_of_runs_is_one_page_and_a_missing_run_is_one_line(tiny_retriever, tiny_questions, tmp_path):
    two_method_run(tiny_retriever, tiny_questions, tmp_path / "grid" / "a")
    two_method_run(tiny_retriever, tiny_questions, tmp_path / "grid" / "b")
    (tmp_path / "grid" / "table.md").write_text("| ours | paper |\n")  # a reproduce grid's printed table
    out = write_view([tmp_path / "grid"], out=tmp_path / "grid.html")
    assert "| ours | paper |" in json.loads(re.search(r'id="data">(.*?)</script>', out.read_text(), re.S)
                                           .group(1))["tables"][str(tmp_path / "grid")]
    names = [r["name"] for r in json.loads(re.search(r'id="data">(.*?)</script>', out.read_text(), re.S)
                                           .group(1))["runs"]]
    assert names == ["a", "b"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(HyporagError, match="no results.jsonl here or below"):
        write_view([tmp_path / "empty"])


def chromium():
    """A headless Chromium through chromedriver, or the reason there is none."""
    try:
        from selenium import webdriver
    except ImportError:
        pytest.skip("selenium is not installed (pip install selenium)")
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        pytest.skip("Debian's chromium and chromium-driver are not installed "
                    "(apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    flags = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000")
    for flag in flags:
        options.add_argument(flag)
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver"))
    return webdriver.Chrome(options=options, service=service)


def test_the_page_in_chromium_filters_and_shows_a_question_side_by_side(tiny_retriever, tiny_questions, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    two_method_run(tiny_retriever, tiny_questions, tmp_path / "run")
    browser = chromium()
    try:
        browser.get((tmp_path / "run" / "report.html").as_uri())
        assert "rag" in browser.find_element(By.ID, "summary").text
        Select(browser.find_element(By.ID, "f-right")).select_by_visible_text("rag")
        Select(browser.find_element(By.ID, "f-wrong")).select_by_visible_text("cot")
        shown = [tr.get_attribute("data-id") for tr in browser.find_elements(By.CSS_SELECTOR, "tr.question")]
        assert shown == ["q1", "q3"]
        assert browser.find_element(By.ID, "count").text == "2 of 3 questions"
        Select(browser.find_element(By.ID, "f-right")).select_by_visible_text("cot")
        Select(browser.find_element(By.ID, "f-wrong")).select_by_visible_text("rag")
        assert browser.find_elements(By.CSS_SELECTOR, "tr.question") == []  # cot is never right where rag is wrong
        Select(browser.find_element(By.ID, "f-right")).select_by_visible_text("rag")
        Select(browser.find_element(By.ID, "f-wrong")).select_by_visible_text("cot")
        browser.find_element(By.CSS_SELECTOR, 'tr.question[data-id="q1"]').click()
        columns = browser.find_elements(By.CSS_SELECTOR, "#columns .column")
        assert [c.get_attribute("data-method") for c in columns] == ["rag", "cot"]
        assert "Which cells secrete insulin?" in browser.find_element(By.ID, "question-text").text
        gold = [m.text.lower() for m in columns[0].find_elements(By.CSS_SELECTOR, "mark.gold")]
        assert "beta cells" in gold  # the gold option's text, highlighted in rag's passages
        assert columns[1].find_elements(By.CSS_SELECTOR, ".passage") == []  # cot retrieves nothing
        assert [c.find_element(By.CSS_SELECTOR, "pre.reply").text for c in columns] == ["B", "A"]
        browser.save_screenshot(str(tmp_path / "question.png"))
        assert (tmp_path / "question.png").stat().st_size > 10_000
    finally:
        browser.quit()


def test_the_page_shows_any_methods_hypothesis_fields(tiny_retriever, tiny_questions, tmp_path):
    """CHR's H+ and H− are shown from the row's hypothesis fields, with no CHR-specific code in the page."""
    from selenium.webdriver.common.by import By

    from hyporag.programs.chr import CHR

    lm = DummyLM([{"target_hypothesis": "Beta cells secrete insulin.", "mimic_hypothesis": "Alpha cells do."},
                  {"answer": "B"}] * 3)
    program = CHR(retriever=tiny_retriever, roles=LMRoles.from_lms(lm), budget=2)
    run_evaluation({"chr": program}, tiny_questions, tmp_path / "run",
                   {"dataset": "tiny", "index_dir": str(tiny_retriever.directory)}, progress=False)
    browser = chromium()
    try:
        browser.get((tmp_path / "run" / "report.html").as_uri() + "#r=0&q=q1")
        column = browser.find_element(By.CSS_SELECTOR, '#columns .column[data-method="chr"]')
        fields = {li.text.split(" ", 1)[0]: li.text.split(" ", 1)[1] for li in
                  column.find_elements(By.CSS_SELECTOR, "ul.details li")}
        assert "hypothesis Beta cells secrete insulin." in column.text  # H+, the hypothesis text
        assert fields["mimic"] == "Alpha cells do." and "target" not in fields  # not repeated
        assert "lambda" in fields and "similarity" in fields
        assert "names B" in column.text  # the option H+ names, as the typed hypothesis says
    finally:
        browser.quit()


def test_a_fit_directory_becomes_one_page_beside_its_own_report(tiny_retriever, tiny_questions, tmp_path, capsys):
    """`hyporag view FITDIR`: the fit's report.html is its report, not a viewer page; the page of its runs goes to
    runs.html beside it, and the fit's report is left as it was."""
    from hyporag.cli import main

    fit_dir = tmp_path / "fit"
    two_method_run(tiny_retriever, tiny_questions, fit_dir / "validation")
    two_method_run(tiny_retriever, tiny_questions, fit_dir / "heldout")
    (fit_dir / "report.html").write_text("<!DOCTYPE html><title>hyporag fit</title><p>the fit's report")
    assert main(["view", str(fit_dir)]) == 0
    assert "runs.html" in capsys.readouterr().out
    names = [r["name"] for r in json.loads(re.search(r'id="data">(.*?)</script>', (fit_dir / "runs.html").read_text(),
                                                     re.S).group(1))["runs"]]
    assert names == ["heldout", "validation"]
    assert (fit_dir / "report.html").read_text().endswith("the fit's report")


def test_the_page_shows_the_paired_tests_a_legend_and_a_partial_runs_own_n(tiny_retriever, tiny_questions, tmp_path):
    """A reader of the page sees whether a difference is real (the paired tests, intervals and questions needed
    that summary.md holds), what DUR, margin and lift mean, and, mid-run, how many questions the summary covers."""
    from selenium.webdriver.common.by import By

    from hyporag.testing import fake_openai

    questions = [{"id": f"q{i}", "question": f"Which organ makes hormone {i}?",
                  "options": {"A": "Pancreas", "B": "Kidney", "C": "Liver"}, "answer": "AB"[i % 2]} for i in range(6)]
    import hyporag
    from hyporag.jobs.run_config import RunConfig

    with fake_openai(["m"], letter_logprobs={"A": -0.3, "B": -1.6, "C": -3.0}) as server:
        hyporag.evaluate(RunConfig(methods="cot,rag", out=str(tmp_path / "run"), lm="openai/m", api_base=server.base(),
                                   api_key="k", no_cache=True, corpus=str(tiny_retriever.directory.parent / "corpus"),
                                   program_settings={"budget": 2}), examples=questions, progress=False)
    rows = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    (tmp_path / "run" / "results.jsonl").write_text("\n".join(rows[:3]) + "\n")  # as if still running
    write_view([tmp_path / "run"])
    browser = chromium()
    try:
        browser.get((tmp_path / "run" / "report.html").as_uri())
        paired = browser.find_element(By.ID, "paired").text
        assert "Wilcoxon p" in paired and "questions for 80% power" in paired and "cot" in paired
        sequences = browser.find_element(By.ID, "sequences").text
        assert "decided at question" in sequences and "cot" in sequences
        legend = browser.find_element(By.CSS_SELECTOR, "p.legend").text
        assert "DUR" in legend and "margin" in legend and "lift over cot" in legend
        assert "n 1 of 6 planned" in browser.find_element(By.TAG_NAME, "main").text
    finally:
        browser.quit()
