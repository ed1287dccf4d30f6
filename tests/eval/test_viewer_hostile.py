"""The viewer against what a shared run can hold: hostile rows (markup where numbers belong, script in text), a
string that would end the page's data block, malformed rows, a file `--out` must not replace, and a served page
asked for under a foreign Host name. The browser test opens the page in Debian's headless Chromium."""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request

import pytest

from hyporag.cli import main
from hyporag.eval.viewer import page, run_data, serve_view, write_view
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.evaluate import run_evaluation
from hyporag.programs.baselines import CoT, SimpleRAG
from tests.conftest import dummy_roles, sigint_default
from tests.eval.test_viewer import chromium

ALERT = "<img src=x onerror=\"document.title='PWNED'\">"


def small_run(tiny_retriever, tiny_questions, out):
    rag = SimpleRAG(retriever=tiny_retriever, roles=dummy_roles([{"answer": a} for a in "BCA"]),
                    budget=3)
    cot = CoT(roles=dummy_roles([{"answer": a} for a in "ACB"]))
    settings = {"dataset": "tiny", "index_dir": str(tiny_retriever.directory), "methods": ["rag", "cot"]}
    run_evaluation({"rag": rag, "cot": cot}, tiny_questions, out, settings, progress=False)
    return out


def hostile_page(tiny_retriever, tiny_questions, tmp_path) -> str:
    """A page whose data carries markup in every field the page draws, as a crafted shard or artifact would: built
    from a real run's data with the values replaced after Python's checks, so the page's own escaping is tested."""
    out = small_run(tiny_retriever, tiny_questions, tmp_path / "run")
    data = run_data(out, "run", {e.id: {"question": e.question, "options": dict(e.options)} for e in tiny_questions})
    for row in data["rows"]:
        row.update(calls=ALERT, input_tokens=ALERT, output_tokens=ALERT, passage_found_by=[[ALERT]] * 3,
                   error=None, judge_label=ALERT, answer=ALERT)
    for summary in data["summary"]["methods"]:
        summary.update(n=ALERT, parse_failures=ALERT, errors=ALERT, accuracy=ALERT)
    data["summary"]["coverage"] = {"questions_complete": ALERT, "questions_planned": ALERT}
    data["questions"]["q1"]["options"][ALERT] = "Beta cells"
    data["questions"]["q1"]["question"] = "<!--<script>" + ALERT
    data["passages"]["p1"]["contents"] += " </script><script>document.title='PWNED'</script>"
    return page([data], "hostile <b>title</b>")


def test_no_text_in_the_data_changes_how_the_page_parses(tiny_retriever, tiny_questions, tmp_path):
    html = hostile_page(tiny_retriever, tiny_questions, tmp_path)
    block = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S).group(1)
    assert "<" not in block and ">" not in block  # `<!--<script>`, `</script>`: only \u003c escapes in the block
    assert json.loads(block)["runs"][0]["questions"]["q1"]["question"].startswith("<!--<script>")


def test_a_page_of_hostile_rows_runs_no_script_in_chromium(tiny_retriever, tiny_questions, tmp_path):
    from selenium.webdriver.common.by import By

    target = tmp_path / "hostile.html"
    target.write_text(hostile_page(tiny_retriever, tiny_questions, tmp_path), encoding="utf-8")
    browser = chromium()
    try:
        for fragment in ("", "#r=0&q=q1", "#r=0&q=q2"):
            browser.get(target.as_uri() + fragment)
            time.sleep(0.3)
            assert browser.title != "PWNED"
            assert browser.find_elements(By.CSS_SELECTOR, "img[onerror]") == []  # drawn as text, never as markup
        browser.get(target.as_uri() + "#r=0&q=q1")
        time.sleep(0.3)
        assert "<!--<script>" in browser.find_element(By.ID, "question-text").text  # the page still draws it
        assert ALERT in browser.find_element(By.ID, "columns").text
    finally:
        browser.quit()


def test_a_malformed_row_is_left_out_of_the_page_with_a_line(tiny_retriever, tiny_questions, tmp_path, capsys):
    out = small_run(tiny_retriever, tiny_questions, tmp_path / "run")
    path = out / "results.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[0]["calls"] = "many"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert main(["view", str(out)]) == 0
    assert "damaged row(s) left out" in capsys.readouterr().err
    data = json.loads(re.search(r'id="data">(.*?)</script>', (out / "report.html").read_text(), re.S).group(1))
    assert len(data["runs"][0]["rows"]) == len(lines) - 1


def test_view_out_never_replaces_a_file_it_did_not_write(tiny_retriever, tiny_questions, tmp_path, capsys):
    out = small_run(tiny_retriever, tiny_questions, tmp_path / "run")
    rows = (out / "results.jsonl").read_bytes()
    assert main(["view", str(out), "--out", str(out / "results.jsonl")]) == 2
    assert "is not a page `hyporag view` wrote" in capsys.readouterr().err
    assert (out / "results.jsonl").read_bytes() == rows
    (tmp_path / "my.csv").write_text("question,A,B,answer\n")
    with pytest.raises(HyporagError, match="nothing overwritten"):
        write_view([out], tmp_path / "my.csv")
    assert write_view([out], out / "report.html") == out / "report.html"  # its own page: redrawn


def serve_in_thread(paths, port):
    thread = threading.Thread(target=serve_view, args=(paths, port), daemon=True)
    thread.start()
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.1)


def get(port, host=None, path="/"):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_the_served_page_answers_only_loopback_hosts_and_says_why_it_cannot_draw(tiny_retriever, tiny_questions,
                                                                                  tmp_path):
    from hyporag.testing import free_port

    out = small_run(tiny_retriever, tiny_questions, tmp_path / "run")
    port = free_port()
    serve_in_thread([out], port)
    assert get(port)[0] == 200 and get(port, f"localhost:{port}")[0] == 200
    assert get(port, path="/?r=0")[0] == 200 and get(port, path="/nothing")[0] == 404  # the page's own query
    assert get(port, "attacker.example")[0] == 421  # a rebound DNS name reaching 127.0.0.1
    assert get(port, f"evil.example:{port}")[0] == 421
    (out / "run.json").write_text("{ not json")
    status, body = get(port)
    assert status == 500 and "run.json: not valid JSON" in body  # a response that says why, not a closed socket


def test_ctrl_c_on_the_served_page_says_the_runs_are_unchanged(tiny_retriever, tiny_questions, tmp_path,
                                                                sigint_ignored):
    import signal
    import subprocess
    import sys

    from hyporag.testing import free_port

    out = small_run(tiny_retriever, tiny_questions, tmp_path / "run")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "hyporag.cli", "view", str(out), "--serve", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    deadline = time.time() + 60
    while time.time() < deadline and get_or_none(port) is None:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert "stopped serving" in stdout and "resume" not in stdout + stderr


def get_or_none(port):
    try:
        return get(port)
    except OSError:
        return None
