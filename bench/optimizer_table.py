"""The before/after-optimization table: each variant's held-out accuracy, its paired difference from the
uncompiled program on the same questions, its validation score and what the optimization cost.

Reads what `bench/optimizer_pipeline.sh` (or the same commands by hand) wrote: `<runs>/<method>-<variant>/` results of
`hyporag eval` and `<artifacts>/<method>-<variant>/manifest.json` of `hyporag compile|tune`.
    .venv/bin/python bench/optimizer_table.py --methods chr,hcqr
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hyporag.eval import paired_comparison, read_results, wilson_interval

VARIANTS = ("before", "optuna", "optuna-modes", "bootstrap", "gepa")


def correct_by_question(results_dir: Path) -> dict[str, bool]:
    """question id -> correct, from the rows `hyporag eval` kept (one method per results directory here)."""
    return {r["question_id"]: bool(r["correct"]) for r in read_results(results_dir)}


def variant_row(method: str, variant: str, runs: Path, artifacts: Path, before: dict[str, bool],
                first_costs: Path | None = None) -> str | None:
    results = runs / f"{method}-{variant}"
    if not (results / "summary.json").exists():
        return None
    correct = correct_by_question(results)
    low, high = wilson_interval(sum(correct.values()), len(correct))
    cells = [method, variant, f"{len(correct)}", f"{sum(correct.values()) / len(correct):.2f} ({low:.2f}–{high:.2f})"]
    if variant == "before":
        cells += ["–", "–", "–", "–", "–"]
    else:
        paired = paired_comparison(correct, before)
        manifest = json.loads((artifacts / f"{method}-{variant}" / "manifest.json").read_text())
        validation = manifest.get("validation", {})
        cost = manifest.get("cost", {})
        first = first_costs / f"artifact-{method}-{variant}" / "manifest.json" if first_costs else None
        if first and first.exists():  # an earlier, uncached run of the same optimization: its cost is the real one
            cost = json.loads(first.read_text()).get("cost", cost)
        phase = cost.get("by_phase", {}).get("optimizer")  # compile meters the optimizer apart from validation
        seconds, calls = ((phase["seconds"], phase["calls"]) if phase
                          else (cost.get("seconds", 0), cost.get("lm_calls", 0)))
        val = (f"{validation['before']:.2f} → {validation['after']:.2f}" if "before" in validation
               else f"best trial {validation.get('after', 0):.2f}")
        settings = manifest.get("optimizer", {})
        shown = {"bootstrap": ("max_demos",), "gepa": ("max_metric_calls", "auto", "reflection_lm"),
                 "mipro": ("auto", "max_demos", "reflection_lm")}.get(settings.get("name", ""), ())
        what = settings.get("best_params") or {k: settings[k] for k in shown if settings.get(k)}
        what = {k: round(v, 2) if isinstance(v, float) else v for k, v in what.items()}
        cells += [f"{paired['difference']:+.2f} (p={paired['p_value']:.2f})", val,
                  f"{seconds / 60:.1f} min", f"{int(calls)}", f"`{json.dumps(what, ensure_ascii=False)}`"]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--methods", default="chr,hcqr")
    parser.add_argument("--runs", type=Path, default=Path("runs/opt"))
    parser.add_argument("--artifacts", type=Path, default=Path("artifacts"))
    parser.add_argument("--first-run-costs", type=Path, help="directory of artifact-<method>-<variant>/ copies from "
                        "an earlier uncached run: report their optimizer cost (a re-run served from cache costs ~0)")
    args = parser.parse_args()
    print("| method | variant | n held-out | accuracy (95% CI) | Δ vs before (McNemar) | validation | "
          "optimizer time | optimizer LM calls | settings found |")
    print("|---|---|---:|---|---|---|---:|---:|---|")
    for method in args.methods.split(","):
        before = correct_by_question(args.runs / f"{method}-before")
        for variant in VARIANTS:
            row = variant_row(method, variant, args.runs, args.artifacts, before, args.first_run_costs)
            if row:
                print(row)


if __name__ == "__main__":
    main()
