"""The report a fit ends with: time and LM calls per stage, held-out accuracy with 95% intervals, paired tests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hyporag.eval.mcnemar import paired_comparison
from hyporag.eval.report import summaries
from hyporag.eval.results_store import latest_rows, read_rows, read_run_settings
from hyporag.eval.row import ResultRow
from hyporag.foundation.atomic import write_json_atomic, write_text_atomic


def _paired(rows: list[dict], a: str, b: str) -> dict:
    typed = [ResultRow.of(r) for r in rows]
    by = {m: {r.question_id: bool(r.correct) for r in typed if r.method == m} for m in (a, b)}
    return paired_comparison(by[a], by[b])


def write_fit_report(out: Path, state) -> dict:
    """report.md / report.json / accuracy.png in `out`, from fit.json and the held-out rows (no LM)."""
    summary = json.loads((out / "heldout" / "summary.json").read_text(encoding="utf-8"))
    rows = latest_rows(read_rows(out / "heldout" / "results.jsonl")[0])
    baseline = read_run_settings(out / "heldout").get("baseline") or "rag"  # the run's setting (older fits: rag)
    tests = {f"{a} vs {b}": _paired(rows, a, b) for a, b in (("tuned", "untuned"), ("tuned", baseline),
                                                              ("untuned", baseline))}
    stages = state.data["stages"]
    lines = [f"# hyporag fit: {state.plan.method} on {state.plan.dataset}", "",
             "| stage | result | seconds | LM calls |", "|---|---|---:|---:|"]
    lines += [f"| {name} | {s.get('summary', '')} | {s['seconds']:.0f} | {s['lm_calls']} |"
              for name, s in stages.items()]
    heldout = summaries(summary)
    lines += ["", f"Held-out questions: {heldout[0].n if heldout else 0} (no optimizer saw "
              "them).", "", "| program | accuracy | 95% CI | parse fail | errors | calls/q |",
              "|---|---:|---|---:|---:|---:|"]
    for s in heldout:
        lines.append(f"| {s.method} | {s.accuracy:.3f} | {s.ci95_low:.3f}–{s.ci95_high:.3f} | "
                     f"{s.parse_failures} | {s.errors} | {s.calls_per_q:.2f} |")
    lines += ["", "| paired test (exact McNemar) | n | difference | a only right | b only right | p |",
              "|---|---:|---:|---:|---:|---:|"]
    for name, t in tests.items():
        lines.append(f"| {name} | {t['n']} | {t['difference']:+.3f} | {t['a_only']} | {t['b_only']} | "
                     f"{t['p_value']:.3f} |")
    write_text_atomic(out / "report.md", "\n".join(lines) + "\n")
    write_json_atomic(out / "report.json", {"plan": state.data["plan"], "stages": stages,
                                            "heldout": summary["methods"], "paired": tests})
    if (out / "heldout" / "accuracy.png").is_file():
        shutil.copyfile(out / "heldout" / "accuracy.png", out / "accuracy.png")
    tuned = next((s for s in heldout if s.method == "tuned"), None)
    return {"summary": f"report.md (tuned {tuned.accuracy:.3f})" if tuned else "report.md"}
