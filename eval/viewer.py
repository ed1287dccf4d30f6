"""`hyporag view`: one self-contained HTML page of one or more runs, to check the mechanism on single questions.

The page holds the summary (accuracy with intervals, McNemar against rag, DUR, cost per role, the hypothesis
mechanism, parse rule and protocol, the plots), a filterable, sortable table with one row per question and a ✓/✗
column per method, and a page per question with each method's hypothesis, queries, passages (each option's text
highlighted, gold apart from the distractors), scores, judge label and answer side by side. Data is embedded once
(a passage's text once however many rows retrieved it) and drawn lazily in the page; nothing is fetched from the
network. A directory holding several runs (a reproduce grid, a fit) becomes one page with a cell per run.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterable, Sequence
from dataclasses import fields
from importlib import resources
from pathlib import Path
from typing import Any

from hyporag.eval.packed import SUFFIX, is_packed, record_file
from hyporag.eval.results_store import ROWS
from hyporag.eval.row import ResultRow
from hyporag.eval.run_questions import read_questions
from hyporag.eval.run_report import build_report, current_rows, groups_of
from hyporag.foundation.atomic import write_text_atomic
from hyporag.foundation.errors import HyporagError
from hyporag.questions.datasets import load_benchmark
from hyporag.retrieval.store import PassageStore

VIEW = "report.html"
RUNS_VIEW = "runs.html"  # the page of a folder of runs
GENERATOR = '<meta name="generator" content="hyporag view">'
# what the page draws of each row: every field of the row's one definition, but for those it never shows
ROW_FIELDS = tuple(f.name for f in fields(ResultRow) if f.name not in (
    "question_fingerprint", "processed_tokens", "judge_calls", "judge_input_tokens", "judge_output_tokens",
    "judge_seconds", "score", "rescored", "measures_rederived"))


def find_runs(paths: Iterable[str | Path]) -> list[Path]:
    """Each path's results directories: itself when it holds results.jsonl, else every one below it, in order."""
    found: list[Path] = []
    for path in map(Path, paths):
        if record_file(path, ROWS).is_file():
            found.append(path)
        elif path.is_dir():
            found += sorted({p.parent for pattern in (ROWS, ROWS + SUFFIX) for p in path.rglob(pattern)})
        else:
            raise HyporagError(f"{path}: not a directory; give a run directory (holding {ROWS}) or a folder of them")
    if not found:
        raise HyporagError(f"{', '.join(map(str, paths))}: no {ROWS} here or below; is this a `hyporag eval` run?")
    return found


def _questions_of(settings: dict, given: dict[str, dict] | None, run_dir: Path) -> tuple[dict[str, dict], str | None]:
    """Question text and options by id: as given (the evaluation that just ran), else the run's own questions.jsonl,
    else (runs from before it) the run's dataset reloaded."""
    if given is not None:
        return given, None
    kept = read_questions(run_dir)
    if kept:
        return {qid: {"question": q["question"], "options": q["options"]} for qid, q in kept.items()}, None

    try:
        loaded = load_benchmark(settings["dataset"], settings.get("data_dir"))
    except (HyporagError, KeyError, TypeError) as exc:
        return {}, f"question text not shown: the dataset {settings.get('dataset')!r} did not load ({exc})"
    return {e.id: {"question": e.question, "options": dict(e.options)} for e in loaded.examples}, None


def _passages_of(settings: dict, ids: set[str], index_dir: str | Path | None = None
                 ) -> tuple[dict[str, dict], str | None]:
    """Title and text of the retrieved passages, from the index the run recorded or the one given (read-only)."""

    directory = index_dir or settings.get("index_dir")
    path = Path(directory) / PassageStore.FILENAME if directory else None
    if not ids:
        return {}, None
    if path is None or not path.is_file():
        return {}, f"passage text not shown: the run's index ({directory or 'not recorded'}) is not here"
    store = PassageStore(path)
    try:
        return {pid: {"title": p.title, "contents": p.contents} for pid, p in store.by_ids(sorted(ids)).items()}, None
    finally:
        store.close()


def _plots(run_dir: Path) -> dict[str, str]:
    return {p.stem: "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode()
            for p in sorted(run_dir.glob("*.png"))}


def run_data(run_dir: Path, name: str, questions: dict[str, dict] | None = None,
             index_dir: str | Path | None = None) -> dict[str, Any]:
    """One run as the page reads it: settings, summary on the questions every method finished, rows, texts."""
    settings, rows, methods, coverage = current_rows(run_dir)
    complete = set(coverage.pop("complete")) if coverage else None
    summary = build_report([r for r in rows if complete is None or r["question_id"] in complete], settings, methods,
                           groups_of(run_dir))
    if coverage:
        summary["coverage"] = coverage
    texts, question_note = _questions_of(settings, questions, run_dir)
    passages, passage_note = _passages_of(settings, {p for r in rows for p in r.get("passage_ids") or []}, index_dir)
    return {"name": name, "settings": settings, "summary": summary, "methods": methods,
            "rows": [{k: r.get(k) for k in ROW_FIELDS} for r in rows], "plots": _plots(run_dir),
            "questions": {q: texts[q] for q in {r["question_id"] for r in rows} if q in texts},
            "passages": passages, "notes": [n for n in (question_note, passage_note) if n]}


def tables_in(paths: Iterable[str | Path]) -> dict[str, str]:
    """A reproduce grid's printed tables (`table.md` beside its cells), shown on the page's index of runs."""
    return {str(p): (Path(p) / "table.md").read_text(encoding="utf-8")
            for p in paths if (Path(p) / "table.md").is_file()}


def page(runs: Sequence[dict[str, Any]], title: str, tables: dict[str, str] | None = None) -> str:
    """The HTML: the template with the data inline (a `</script>` inside passage text cannot end the block)."""
    template = resources.files("hyporag.eval").joinpath("viewer.html").read_text(encoding="utf-8")
    data = json.dumps({"title": title, "runs": list(runs), "tables": tables or {}}, ensure_ascii=False,
                      separators=(",", ":"))
    # `<`, `>` and `&` only occur inside JSON strings, where \u escapes mean the same: no text (`</script>`,
    # `<!--<script>`) can change how the page parses around the block
    data = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    head, tail = template.split("__DATA__")
    return head.replace("__TITLE__", html.escape(title)) + data + tail


def render(paths: Sequence[str | Path], questions: dict[str, dict] | None = None,
           index_dir: str | Path | None = None) -> str:
    """The page of the runs under `paths`, drawn from their rows as they are now (what `write_view` writes and
    `serve_view` sends on every request); a run below a given folder is named by its path inside it."""
    runs = find_runs(paths)
    base = Path(paths[0])
    names = [str(r.relative_to(base)) if r != base and r.is_relative_to(base) else r.name for r in runs]
    data = [run_data(r, n or r.name, questions, index_dir) for r, n in zip(runs, names, strict=True)]
    return page(data, f"hyporag: {', '.join(map(str, paths))}", tables_in(paths))


def write_view(paths: Iterable[str | Path], out: str | Path | None = None,
               questions: dict[str, dict] | None = None, index_dir: str | Path | None = None) -> Path:
    """Write the page for these runs (default: report.html in the one run directory given) and return its path.
    `questions` (id -> question, options) saves reloading the dataset when the caller has it; `index_dir` names
    the index for runs that did not record theirs."""
    paths = list(paths)
    target = Path(out) if out else default_page(paths)
    if target.is_dir():
        raise HyporagError(f"{target}: is a directory; --out names the HTML file to write")
    if target.exists() and not _our_page(target):
        raise HyporagError(f"{target}: exists and is not a page `hyporag view` wrote; give a new --out (nothing "
                           "overwritten)")
    write_text_atomic(target, render(paths, questions, index_dir))
    return target


def default_page(paths: Sequence[str | Path]) -> Path:
    """Where a page goes when no --out is given: report.html in the one run directory given; runs.html in a folder
    of runs (a fit or a reproduce grid, whose own report.html is its report, not this page); else ./report.html."""
    base = Path(paths[0]) if paths else Path()
    if len(paths) != 1 or not base.is_dir():
        return Path(VIEW)
    if is_packed(base):
        raise HyporagError(f"{base}: is a packed run (read-only); give --out for the page")
    return base / (VIEW if (base / ROWS).is_file() else RUNS_VIEW)


def _our_page(path: Path) -> bool:
    """Whether `path` is a page this viewer wrote (its generator tag in the first bytes): only those are replaced."""
    try:
        with path.open("rb") as handle:
            return GENERATOR.encode() in handle.read(512)
    except OSError:
        return False


def _local_host(header: str | None) -> bool:
    """A Host header naming this machine's loopback (127.0.0.1, localhost, [::1]) with any port."""
    if not header:
        return False
    host = header.rsplit(":", 1)[0] if not header.endswith("]") else header
    if header.startswith("["):
        host = header[1:].split("]", 1)[0]
    return host.lower() in ("127.0.0.1", "localhost", "::1")


def serve_view(paths: Iterable[str | Path], port: int = 8765, host: str = "127.0.0.1",
               index_dir: str | Path | None = None) -> None:
    """Serve the page on http://host:port/ and draw it afresh on every request, so a reload shows a running
    evaluation's new rows. Blocks until interrupted."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    paths = list(paths)
    find_runs(paths)  # a wrong path fails now, in one line, not on the first request

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if not _local_host(self.headers.get("Host")):  # a rebound DNS name reaching 127.0.0.1 is not served
                self.send_error(421, "this viewer answers only requests for 127.0.0.1 or localhost")
                return
            if self.path.split("?", 1)[0] not in ("/", "/index.html"):  # a query (`/?r=0`) is the page's own
                self.send_error(404)
                return
            try:
                body, status = render(paths, index_dir=index_dir).encode(), 200
            except (HyporagError, OSError, ValueError, KeyError, TypeError) as exc:  # say why, keep serving
                body = f"<!DOCTYPE html><meta charset=utf-8><title>hyporag view</title><p>{html.escape(str(exc))}"
                body, status = body.encode(), 500
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    print(f"serving {', '.join(map(str, paths))} on http://{host}:{server.server_port}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped serving (the runs are unchanged; serve again with the same command)", flush=True)
    finally:
        server.server_close()
