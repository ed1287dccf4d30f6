"""docs/results/speed.md's tables from bench/speed_ab.py's rows: per method and variant, time, tokens sent and
processed, the floor from the rates calibrated in the same run, accuracy with the paired test, and the speed goals."""

from __future__ import annotations

from collections import defaultdict

from hyporag.eval import paired_comparison, wilson_interval


def rates(calibrations: list[dict]) -> tuple[float, float]:
    """Prefill and decode tokens per second over every calibration of the run."""
    prompt = sum(c["prompt_n"] or 0 for c in calibrations), sum(c["prompt_ms"] or 0 for c in calibrations)
    decode = sum(c["predicted_n"] or 0 for c in calibrations), sum(c["predicted_ms"] or 0 for c in calibrations)
    return prompt[0] / (prompt[1] / 1e3), decode[0] / (decode[1] / 1e3)


def complete(rows: list[dict], variants: list[str], methods: tuple[str, ...]) -> dict[tuple[str, str], dict]:
    """The rows of questions every variant finished for every method, keyed (variant, method) -> {qid: row}."""
    by = defaultdict(dict)
    for r in rows:
        by[r["variant"], r["method"]][r["question_id"]] = r
    shared = None
    for key in [(v, m) for v in variants for m in methods]:
        ids = set(by[key])
        shared = ids if shared is None else shared & ids
    return {k: {q: r for q, r in v.items() if q in (shared or set())} for k, v in by.items()}


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def tables(rows: list[dict], calibrations: list[dict], variants: list[str], methods: tuple[str, ...],
           command: str) -> str:
    if not rows or not calibrations:
        return "no rows yet\n"
    prefill, decode = rates(calibrations)
    runs = complete(rows, variants, methods)
    n = len(next(iter(runs.values()))) if runs else 0
    lines = [f"Command: `{command}`", "",
             f"{n} questions, every variant and method on each; prefill {prefill:.1f} tokens/s and decode "
             f"{decode:.1f} tokens/s (llama.cpp's timings, {len(calibrations)} calibrations in the same run).", "",
             "| method | variant | accuracy | 95% CI | parse fail | errors | gold in ctx | s/q | llama.cpp s/q | "
             "sent tok/q | processed tok/q | processed / sent | out tok/q | floor s/q | measured / floor |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    summary = {}
    for method in methods:
        for variant in variants:
            qs = list(runs.get((variant, method), {}).values())
            if not qs:
                continue
            correct = sum(bool(r["correct"]) for r in qs)
            low, high = wilson_interval(correct, len(qs))
            seconds = mean([r["seconds"] for r in qs])
            sent = mean([r["input_tokens"] for r in qs])
            processed = mean([r["processed_tokens"] or 0 for r in qs])
            out = mean([r["output_tokens"] for r in qs])
            inside = mean([(r["llama"]["prompt_ms"] + r["llama"]["predicted_ms"]) / 1e3 for r in qs])
            floor = processed / prefill + out / decode
            with_context = [r for r in qs if r.get("gold_in_context") is not None]
            gold = mean([bool(r["gold_in_context"]) for r in with_context]) if with_context else None
            summary[variant, method] = {"seconds": seconds, "sent": sent, "processed": processed,
                                        "correct": {r["question_id"]: bool(r["correct"]) for r in qs}}
            lines.append(f"| {method} | {variant} | {correct / len(qs):.3f} | {low:.2f}–{high:.2f} | "
                         f"{sum(bool(r['parse_failure']) for r in qs)} | {sum(bool(r['error']) for r in qs)} | "
                         f"{'–' if gold is None else f'{gold:.2f}'} | {seconds:.1f} | {inside:.1f} | {sent:.0f} | "
                         f"{processed:.0f} | {processed / sent:.2f} | {out:.0f} | {floor:.1f} | "
                         f"{seconds / floor:.2f} |")
    if "old" in variants:
        lines += ["", "| method | variant | s/q new ÷ old (goal ≤ 0.6) | processed ÷ sent (goal ≤ 0.5) | "
                  "accuracy new − old | McNemar p |", "|---|---|---:|---:|---:|---:|"]
        for method in methods:
            old = summary.get(("old", method))
            for variant in [v for v in variants if v != "old"]:
                new = summary.get((variant, method))
                if not old or not new:
                    continue
                paired = paired_comparison(new["correct"], old["correct"])
                lines.append(f"| {method} | {variant} | {new['seconds'] / old['seconds']:.2f} | "
                             f"{new['processed'] / new['sent']:.2f} | {paired['difference']:+.3f} | "
                             f"{paired['p_value']:.2f} |")
    lines += speculative_lines(runs, variants, methods)
    return "\n".join(lines) + "\n"


REPLY_FIELDS = ("answer_reply", "answer_reasoning", "queries", "hypothesis", "passage_ids")


def speculative_lines(runs: dict[tuple[str, str], dict], variants: list[str], methods: tuple[str, ...]) -> list[str]:
    """Each speculative variant against `new` on the same questions: decode rate (llama.cpp's own timings), the
    share of drafted tokens accepted, seconds per question, and whether every reply came out byte for byte the same
    (greedy speculative decoding must not change them)."""
    from speed_ab import VARIANTS  # bench/ sibling

    speculative = [v for v in variants if VARIANTS[v].get("speculative", "none") != "none"]
    if "new" not in variants or not speculative:
        return []
    lines = ["", "Speculative decoding against plain decoding (`new`), same questions. Goals: decode ≥ 1.5× on the "
             "paper protocol; s/q ≤ 0.8× for hcqr and chr under the paper protocol, ≤ 0.9× under fast; replies "
             "identical.", "",
             "| method | variant | decode tok/s plain | decode tok/s speculative | decode × | drafted tok/q | "
             "accepted | s/q plain | s/q speculative | s/q × | same replies |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for method in methods:
        plain = runs.get(("new", method), {})
        for variant in speculative:
            spec = runs.get((variant, method), {})
            shared = sorted(set(plain) & set(spec))
            if not shared:
                continue
            rate = [sum(r[q]["llama"]["predicted_n"] for q in shared) /
                    max(1e-9, sum(r[q]["llama"]["predicted_ms"] for q in shared) / 1e3) for r in (plain, spec)]
            drafted = sum(spec[q]["llama"]["draft_n"] for q in shared)
            accepted = sum(spec[q]["llama"]["draft_n_accepted"] for q in shared)
            seconds = [mean([r[q]["seconds"] for q in shared]) for r in (plain, spec)]
            same = sum(all(plain[q].get(f) == spec[q].get(f) for f in REPLY_FIELDS) for q in shared)
            lines.append(f"| {method} | {variant} | {rate[0]:.1f} | {rate[1]:.1f} | {rate[1] / rate[0]:.2f} | "
                         f"{drafted / len(shared):.0f} | {accepted / drafted if drafted else 0:.2f} | "
                         f"{seconds[0]:.1f} | {seconds[1]:.1f} | {seconds[1] / seconds[0]:.2f} | "
                         f"{same}/{len(shared)} |")
    return lines
