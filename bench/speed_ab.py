"""The adapter A/B: the embedded model's prompts as JSONAdapter lays them out (`old`, today's) and as the lean adapter
does (`new`), side by side in one process on the same questions, every LM call fresh (DSPy's cache off). Question by
question, old and new alternate which goes first, each running cot, rag, hcqr and chr (B = 3, fast protocol) on the
one llama.cpp server, so the machine's noise falls on both alike. Each row keeps the seconds, the prompt tokens sent
and processed (llama.cpp's cache_n), the output tokens and llama.cpp's own prefill and decode milliseconds. Prefill
and decode rates are calibrated in the same run (a fresh ~600-token prompt and up to 64 generated tokens, every 8
questions, on every variant's server alike); a method's floor is processed tokens / prefill rate + generated tokens /
decode rate. Rows are appended as they finish; a re-run resumes. The answer step's variants (per-passage,
on-demand) are timed the same way against `new`.
    .venv/bin/python bench/speed_ab.py --out runs/speed-ab --doc docs/results/speed.md
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

METHODS = ("cot", "rag", "hcqr", "chr")
VARIANTS = {"old": {"adapter": "json"}, "new": {"adapter": "auto"},
            # llama.cpp options, tried against `new`: shifted-chunk reuse, and no host prompt cache (slot cache only)
            "new+reuse": {"adapter": "auto", "reuse": 64}, "new-hostcache": {"adapter": "auto", "host_mib": 0},
            # speculative decoding (hyporag.lm.speculative) against `new`: the same replies, fewer decode steps
            "new+ngram": {"adapter": "auto", "speculative": "ngram"},
            "new+ngram-mod": {"adapter": "auto", "speculative": "ngram-mod"},
            "new+draft": {"adapter": "auto", "speculative": "draft"},
            # the answer step (docs/results/per-passage.md) against `new`: each passage read alone, and closed-book
            # first with retrieval only below 0.5
            "per-passage": {"adapter": "auto", "program": {"answer_mode": "per-passage"}},
            "on-demand": {"adapter": "auto", "program": {"retrieve_below": 0.5}},
            # differential retrieval (docs/results/differential.md) against `new`: closed-book first below the
            # threshold the validation study chose, hcqr's and chr's hypotheses from the reader's doubt (rag has
            # no hypothesis: it answers on demand alone)
            "reader-0.49": {"adapter": "auto", "program": {"retrieve_below": 0.49, "hypothesis_from": "reader"}}}
TIMING_FIELDS = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n", "draft_n", "draft_n_accepted",
                 "calls")


def question_set(demo: int, extra: int, seed: int) -> list[tuple[str, object]]:
    """The demo's questions (mmlu-med-dev, its seeded order) and `extra` more from mmlu-med-dev + mmlu-med-val."""
    from hyporag import load_benchmark, select_examples

    shown = select_examples(load_benchmark("mmlu-med-dev").examples, demo, seed)
    ids = {e.id for e in shown}
    pool = [e for e in select_examples(load_benchmark("mmlu-med-dev,mmlu-med-val").examples, None, seed)
            if e.id not in ids]
    return [("demo", e) for e in shown] + [("mmlu-med", e) for e in pool[:extra]]


def engine_of(roles):
    from hyporag.lm import engine_of

    return engine_of(roles.answer.lm)


def calibrate(engine, index: int, corpus_texts: list[str]) -> dict:
    """One fresh prompt (nothing of it cached) and a free generation: llama.cpp's prefill and decode rates now."""
    text = f"Note {index}. " + " ".join(corpus_texts[index % len(corpus_texts):][:6])[:2600]
    body = {"messages": [{"role": "user", "content": text + "\n\nSummarise this note in detail."}],
            "max_tokens": 64, "temperature": 0.0}
    timings = engine.server.handle_chat_completions(body).get("timings") or {}
    return {k: timings.get(k) for k in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/speed-ab"))
    parser.add_argument("--doc", type=Path, help="write the markdown tables here")
    parser.add_argument("--demo-questions", type=int, default=16)
    parser.add_argument("--extra-questions", type=int, default=40)
    parser.add_argument("--variants", default="old,new")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--protocol", default="fast", choices=("fast", "paper"))
    parser.add_argument("--budget", type=int, default=3)
    parser.add_argument("--methods", default=",".join(METHODS), help="a subset of cot,rag,hcqr,chr (a re-run's "
                        "tables cover these)")
    parser.add_argument("--table-only", action="store_true", help="redraw the tables from the rows (no LM)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows_path, calib_path = args.out / "rows.jsonl", args.out / "calibration.jsonl"
    variants = args.variants.split(",")
    methods = tuple(m for m in args.methods.split(",") if m)
    unknown = [m for m in methods if m not in METHODS] + [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown method or variant: {', '.join(unknown)} (methods: {', '.join(METHODS)}; variants: "
                     f"{', '.join(VARIANTS)})")
    command_path = args.out / "command.txt"
    if not args.table_only:
        command_path.write_text(" ".join(["python", "bench/speed_ab.py", *(argv if argv is not None else
                                                                           sys.argv[1:])]))
        run(args, variants, methods, rows_path, calib_path)
    from speed_ab_table import (
        tables,  # bench/ sibling (the script's own folder is on sys.path), kept apart to stay small
    )

    command = command_path.read_text() if command_path.is_file() else "?"
    text = tables(read_jsonl(rows_path), read_jsonl(calib_path), variants, methods, command)
    print(text)
    if args.doc:
        args.doc.write_text(text)
    return 0


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.open()] if path.is_file() else []


def run(args, variants: list[str], methods: tuple[str, ...], rows_path: Path, calib_path: Path) -> None:
    from tqdm import tqdm

    from hyporag import RunConfig, build_program, build_retriever, build_roles
    from hyporag.eval import run_one

    config = RunConfig(no_cache=True, program_settings={"budget": args.budget, "protocol": args.protocol})
    retriever = build_retriever(config, True)
    setups = {}
    for name in variants:
        roles = build_roles(config.replace(adapter=VARIANTS[name]["adapter"]))
        engine = engine_of(roles)  # its server starts lazily: options set now apply
        engine.cache_reuse, engine.host_cache_mib = VARIANTS[name].get("reuse", 0), VARIANTS[name].get("host_mib")
        engine.speculative = VARIANTS[name].get("speculative", "none")
        variant = config.replace(program_settings={**config.program_settings, **VARIANTS[name].get("program", {})})
        setups[name] = (roles, {m: build_program(m, variant, retriever, roles) for m in methods})
    done = {(r["variant"], r["method"], r["question_id"]) for r in read_jsonl(rows_path)}
    questions = question_set(args.demo_questions, args.extra_questions, args.seed)
    texts = [p.contents for p in retriever.store.get(list(range(0, 40_000, 100)))]  # fresh text to calibrate on
    calibrations = len(read_jsonl(calib_path))
    wanted = {(name, method, example.id) for _, example in questions for name in variants for method in methods}
    bar = tqdm(total=len(wanted), initial=len(done & wanted), unit="answer")  # rows of other variants don't count
    with rows_path.open("a") as rows_out, calib_path.open("a") as calib_out:
        for position, (group, example) in enumerate(questions):
            if position % 8 == 0 and calibrations <= position // 8:
                # every variant's server gets the same calibration prompt, so each server's prompt cache holds the
                # same history (a reused prefix changes llama.cpp's batch split and can flip a greedy near-tie:
                # replies are comparable only between servers that saw the same requests); the rates are the
                # first variant's
                for name in variants:
                    timings = calibrate(engine_of(setups[name][0]), position, texts)
                    if name == variants[0]:
                        calib_out.write(json.dumps({"at_question": position, **timings}) + "\n")
                calib_out.flush()
                calibrations += 1
            order = variants if position % 2 == 0 else variants[::-1]
            for name in order:
                roles, programs = setups[name]
                engine = engine_of(roles)
                for method in methods:
                    if (name, method, example.id) in done:
                        continue
                    before = engine.timings.snapshot()
                    started = time.perf_counter()
                    row = run_one(programs[method], example, method)
                    after = engine.timings.snapshot()
                    row.update(variant=name, group=group, wall_seconds=round(time.perf_counter() - started, 3),
                               llama={k: after[k] - before[k] for k in TIMING_FIELDS})
                    rows_out.write(json.dumps(row) + "\n")
                    rows_out.flush()
                    bar.update(1)
    bar.close()


if __name__ == "__main__":
    sys.exit(main())
