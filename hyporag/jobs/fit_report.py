"""The report a fit ends with: time and LM calls per stage, held-out accuracy with 95% intervals, paired tests; for
several candidates, the rule, each candidate's validation scores and stages, and held-out paired against the pick."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hyporag.eval.decision import LEAD, paired_measures
from hyporag.eval.markdown_page import markdown_page
from hyporag.eval.mcnemar import paired_comparison
from hyporag.eval.results_store import latest_rows, read_results, read_rows, read_run_settings
from hyporag.eval.row import ResultRow
from hyporag.eval.run_report import cell, summaries
from hyporag.foundation.atomic import write_json_atomic, write_text_atomic
from hyporag.jobs.fit_plan import FitState


def _paired(rows: list[dict], a: str, b: str) -> dict:
    typed = [ResultRow.of(r) for r in rows]
    by = {m: {r.question_id: bool(r.correct) for r in typed if r.method == m} for m in (a, b)}
    return paired_comparison(by[a], by[b])


def write_fit_report(out: Path, state: FitState) -> dict:
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


def confirmation(rows: list[dict], chosen: str, simplest: str, seed: int, alone: bool = False) -> dict:
    """Whether held-out agrees with the choice: the chosen program against the simplest (rag), paired (accuracy and
    log p(gold)). `alone`: the simplest was the only candidate validated (the others were not raced or failed)."""
    if chosen == simplest:
        why = ("no other candidate was validated" if alone else "no candidate beat it beyond chance on validation")
        return {"confirms": None, "text": f"{simplest} was kept ({why}); held-out shows how it compares with cot"
                                          + ("" if alone else " and the runner-up")}
    paired = paired_measures(rows, simplest, seed).get(chosen) or {}
    accuracy, lead = paired.get("accuracy") or {}, paired.get(LEAD) or {}
    confirms = (accuracy.get("mean") or 0) >= 0 and (lead.get("mean") or 0) > 0
    text = (f"{chosen} against {simplest} on held-out: accuracy {cell(accuracy.get('mean'), '{:+.3f}')} (McNemar p "
            f"{cell(accuracy.get('mcnemar_p'))}), log p(gold) {cell(lead.get('mean'), '{:+.3f}')} (95% CI "
            f"{cell(lead.get('ci95_low'), '{:+.3f}')} to {cell(lead.get('ci95_high'), '{:+.3f}')}): "
            + ("held-out agrees with the choice" if confirms else "held-out does not confirm the choice"))
    return {"confirms": confirms, "text": text, "paired": paired}


def heldout_lines(accuracy: dict[str, float], paired: dict[str, dict], chosen: str) -> list[str]:
    """Held-out, every program paired against the chosen one on the same questions: accuracy with McNemar, the
    lead measure and the margin with a bootstrap interval and Wilcoxon."""

    def continuous(entry: dict) -> str:
        if entry.get("mean") is None:
            return "– | –"
        return (f"{entry['mean']:+.3f} ({entry['ci95_low']:+.2f} to {entry['ci95_high']:+.2f}) | "
                f"{cell(entry.get('wilcoxon_p'))}")

    lines = ["", f"| held-out | accuracy | Δ accuracy vs {chosen} | McNemar p | Δ log p(gold) (95% CI) | Wilcoxon p | "
             "Δ margin (95% CI) | Wilcoxon p |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for method, value in accuracy.items():
        if method == chosen:
            lines.append(f"| {method} (chosen) | {value:.3f} | | | | | | |")
            continue
        entry = paired.get(method) or {}
        acc = entry.get("accuracy") or {}
        lines.append(f"| {method} | {value:.3f} | {cell(acc.get('mean'), '{:+.3f}')} | {cell(acc.get('mcnemar_p'))} | "
                     f"{continuous(entry.get(LEAD) or {})} | {continuous(entry.get('margin') or {})} |")
    return lines


def _path(method: str, raced: dict, stages: dict) -> str:
    """Where a candidate's path through the fit ended, as the report's table says it."""
    dropped = raced["dropped"].get(method)
    failed = ((stages.get("candidates") or {}).get("failed") or {}).get(method)
    if dropped and dropped.get("behind"):
        return f"race, question {dropped['question']}, behind {dropped['behind']} ({dropped['by']})"
    if dropped:
        return f"race, question {dropped['question']}: every answer errored ({dropped.get('error')})"
    if method in (raced.get("capped") or []):
        return "not raced: over the LM-call cap"
    if method not in raced["survivors"]:
        return "not raced or tuned: the validation split is too small for it to be chosen"
    if failed:
        return f"its tuning failed ({failed}); not validated"
    return "went on to tuning"


def race_lines(raced: dict | None, methods: list[str], stages: dict) -> list[str]:
    """Each candidate's path through the fit: the questions and LM calls of its untuned program in the race, and
    the stage it stopped at (dropped at question q behind another or for errors, not raced, or tuned)."""
    if not raced:
        return []
    tuned = (stages.get("candidates") or {}).get("cost") or {}
    lines = [f"Race: the untuned programs on {raced['race_questions']} train and validation questions; a candidate "
             f"surely worse than another stopped there (confidence sequences, alpha {raced['alpha']:g} over "
             f"{raced['pairs']} pair(s) and two measures).", "",
             "| candidate | race questions | race LM calls | stopped at | tune + compile LM calls |",
             "|---|---:|---:|---|---:|"]
    for method in methods:
        where = _path(method, raced, stages)
        spent = sum(c.get("lm_calls", 0) for c in (tuned.get(method) or {}).values())
        lines.append(f"| {method} | {raced['questions'].get(method, 0)} | {raced['calls'].get(method, 0)} | {where} | "
                     f"{spent if method in tuned else '–'} |")
    return lines


def too_small_lines(stages: dict) -> list[str]:
    """What a validation split too small for the rule meant for this fit, said before its tables."""
    raced = stages.get("race") or {}
    if not raced.get("not_tuned_too_few"):
        return []
    kept = (stages.get("validate") or {}).get("simplest") or raced["survivors"][0]
    return [f"**Validation split too small**: on its questions no candidate could have been shown better than "
            f"{kept} (fit's plan said so before any call), so only {kept} was tuned; the other candidates were not "
            "raced, tuned or validated, and nothing here compares them.", ""]


def write_candidates_report(out: Path, state: FitState, methods: list[str]) -> dict:
    stages = state.data["stages"]
    selection, heldout = stages["validate"], stages["evaluate"]
    plan = state.data["plan"]
    lines = [f"# hyporag fit: {', '.join(methods)} on {state.plan.dataset}", "",
             f"Each candidate's study maximised `{plan.get('objective', 'accuracy')}` over {plan.get('trials')} "
             f"trial(s); prompts: {plan.get('optimizer') or 'none'}; metric `{plan.get('metric', 'accuracy')}`.", "",
             f"Rule: {selection['rule']['text']}.", "", *too_small_lines(stages), *race_lines(stages.get("race"),
                                                                                               methods, stages), "",
             "| candidate | validation accuracy | log p(gold) | LM calls/q | verdict |", "|---|---:|---:|---:|---|"]
    for method in selection["ranking"]:
        s = selection["scores"][method]
        lines.append(f"| {method}{' (chosen)' if method == selection['chosen'] else ''} | {s['accuracy']:.3f} | "
                     f"{cell(s['log_p_gold'])} | {s['calls_per_q']:.2f} | {selection['verdicts'][method]} |")
    paired = paired_measures(read_results(out / "heldout"), selection["chosen"], state.plan.seed)
    lines += heldout_lines(heldout["accuracy"], paired, selection["chosen"])
    lines += ["", heldout["confirmation"]["text"] + ".", "",
              "| candidate | stage | seconds | LM calls |", "|---|---|---:|---:|"]
    for method, cost in stages["candidates"]["cost"].items():
        lines += [f"| {method} | {name} | {c['seconds']:.0f} | {c['lm_calls']} |" for name, c in cost.items()]
    lines += [f"| (all) | {name} | {s['seconds']:.0f} | {s['lm_calls']} |" for name, s in stages.items()
              if name in ("race", "validate", "evaluate")]
    write_text_atomic(out / "report.md", "\n".join(lines) + "\n")
    links = [(f"{name} questions, side by side", f"{name}/report.html") for name in ("race", "validation", "heldout")
             if (out / name / "report.html").is_file()]
    write_text_atomic(out / "report.html", markdown_page("\n".join(lines), f"hyporag fit: {out.name}", links))
    write_json_atomic(out / "report.json", {"plan": state.data["plan"], "estimate": state.data.get("estimate"),
                                            "stages": stages, "heldout_paired_vs_chosen": paired})
    return {"summary": f"report.md, report.html ({selection['chosen']} chosen)"}
