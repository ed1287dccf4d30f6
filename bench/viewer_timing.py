"""docs/viewer.md's timing: a 10,000-row run opened in headless Chromium (Debian's chromium + chromedriver).

Builds a synthetic run (QUESTIONS questions × 2 methods, 3 passages a row, each passage's text ~700 characters, in
a real passage store), writes its page with `hyporag.write_view`, then loads it ROUNDS times in one browser and
reads the page's own mark: milliseconds from navigation start to the first full draw of summary and table.
    .venv/bin/python bench/viewer_timing.py --questions 5000 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hyporag import write_view
from hyporag.retrieval import Passage, PassageStore


def synthetic_run(root: Path, questions: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    words = ["insulin", "glucagon", "beta", "alpha", "cells", "pancreas", "liver", "kidney", "renal", "cortex",
             "hormone", "receptor"]
    text = lambda n: " ".join(rng.choice(words) for _ in range(n))  # noqa: E731
    index = root / "index"
    index.mkdir(parents=True)
    PassageStore.build(index / PassageStore.FILENAME,
                       (Passage(f"p{i}", text(4), text(110)) for i in range(3 * questions)))
    run = root / "run"
    run.mkdir()
    methods = ["rag", "chr"]
    (run / "run.json").write_text(json.dumps({"dataset": "synthetic", "n": questions, "methods": methods,
                                              "index_dir": str(index), "budget": 3}))
    with (run / "results.jsonl").open("w") as out:
        for q in range(questions):
            for method in methods:
                ids = [f"p{rng.randrange(3 * questions)}" for _ in range(3)]
                answer, gold = rng.choice("ABCD"), rng.choice("ABCD")
                out.write(json.dumps({"question_id": f"q-{q:05d}", "method": method, "answer": answer,
                                      "gold": gold, "correct": answer == gold, "passage_ids": ids,
                                      "passage_scores": [1.0, 0.9, 0.8], "queries": [text(30)], "calls": 2,
                                      "input_tokens": 900, "output_tokens": 40, "seconds": 12.0,
                                      "fallbacks": {}, "details": {}}) + "\n")
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    from selenium import webdriver

    with tempfile.TemporaryDirectory() as tmp:
        run = synthetic_run(Path(tmp), args.questions)
        started = time.perf_counter()
        page = write_view([run], out=Path(tmp) / "report.html")
        written = time.perf_counter() - started
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium")
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
            options.add_argument(flag)
        browser = webdriver.Chrome(options=options,
                                   service=webdriver.ChromeService(executable_path=shutil.which("chromedriver")))
        try:
            loads = []
            for _ in range(args.rounds):
                browser.get("about:blank")  # a fresh load each round, not a hash change
                browser.get(page.as_uri())
                loads.append(float(browser.execute_script("return document.body.dataset.renderedMs")))
            shown = len(browser.find_elements("css selector", "tr.question"))
            count = browser.find_element("id", "count").text
        finally:
            browser.quit()
        size = page.stat().st_size
    print(f"rows {2 * args.questions:,} ({args.questions:,} questions × 2 methods), page {size / 1e6:.1f} MB, "
          f"written in {written:.1f} s; Chromium load to first draw: median {statistics.median(loads):.0f} ms, "
          f"max {max(loads):.0f} ms over {len(loads)} loads ({', '.join(f'{x:.0f}' for x in loads)}); "
          f"table shows {shown} rows, '{count}'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
