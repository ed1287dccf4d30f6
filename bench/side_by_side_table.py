"""The README's side-by-side table of one `hyporag eval --dur` results directory, one line per method.

Reads only `summary.json` (run `hyporag report DIR` first to redraw it from the rows); refuses a partial run unless
`--allow-partial`, so a table in README is always of a finished run.
    .venv/bin/python bench/side_by_side_table.py runs/mmlu100
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hyporag.eval import cell


def method_line(s: dict, dur: dict | None, roles: dict) -> str:
    judge = roles.get("judge", {})
    labels = "–" if not dur else f"{dur['Entailed']}/{dur['Useful']}/{dur['NotUseful']}"
    versus = ("–" if s.get("vs_rag_difference") is None
              else f"{s['vs_rag_difference']:+.2f} (p={s['vs_rag_p_value']:.2f})")
    return (f"| {s['method']} | {s['n']} | **{s['accuracy']:.2f}** ({s['ci95_low']:.2f}–{s['ci95_high']:.2f}) | "
            f"{versus} | {cell(s.get('dur'), '{:.2f}')} | {labels} | {s['parse_failures']} | {s['errors']} | "
            f"{s['calls_per_q']:.2f} | {s['input_tokens_per_q']:.0f} / {s['output_tokens_per_q']:.0f} | "
            f"{cell(judge.get('input_tokens'), '{:.0f}')} / {cell(judge.get('output_tokens'), '{:.0f}')} | "
            f"{cell(s.get('gold_in_context'), '{:.2f}')} |")


def table(summary: dict) -> str:
    lines = ["| method | n | accuracy (95% CI) | Δ vs rag (McNemar p) | DUR | E/U/N | parse fail | errors | "
             "calls/q | in / out tok/q | judge in / out tok/q | gold in ctx |",
             "|---|---:|---|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for s in summary["methods"]:
        lines.append(method_line(s, summary["dur"].get(s["method"]), summary.get("cost_by_role", {})
                                 .get(s["method"], {})))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--allow-partial", action="store_true")
    args = parser.parse_args(argv)
    path = args.run_dir / "summary.json"
    if not path.is_file():
        print(f"{path}: not found; run `hyporag report {args.run_dir}` first", file=sys.stderr)
        return 2
    summary = json.loads(path.read_text(encoding="utf-8"))
    if summary.get("coverage") and not args.allow_partial:
        c = summary["coverage"]
        print(f"{path}: partial run ({c['questions_complete']} of {c['questions_planned']} questions); "
              "finish it or pass --allow-partial", file=sys.stderr)
        return 1
    print(table(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
