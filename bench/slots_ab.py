"""One llama.cpp slot against two, with two answers in flight: the embedded engine's throughput for `eval
--threads 2` and its latency per answer, side by side in one process on the same questions (DSPy's cache off).

Variants, each on its own server: `1x1` (one slot, one answer at a time: what `eval` does by default), `1x2` (one
slot, two answers in flight: their requests queue for the slot) and `2x2` (two slots, two in flight: llama.cpp
decodes both sequences in one batch; prefill does not batch). Questions go in rounds of --round; in each round every
variant answers the round's questions (alternating which goes first), and the round's wall clock is kept beside each
answer's own seconds. Rows are appended as they finish; a re-run resumes by round.
    .venv/bin/python bench/slots_ab.py --out runs/slots-ab --questions 16
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from statistics import mean, median

from speed_ab_table import REPLY_FIELDS  # bench/ sibling: the fields a reply is compared on

VARIANTS = {"1x1": (1, 1), "1x2": (1, 2), "2x2": (2, 2)}  # name -> (slots, answers in flight)


def run(args, variants: list[str], methods: list[str], rows_path: Path) -> None:
    from speed_ab import question_set
    from tqdm import tqdm

    from hyporag import RunConfig, build_program, build_retriever, build_roles
    from hyporag.eval import run_one, run_parallel
    from hyporag.lm import engine_of, new_server

    config = RunConfig(no_cache=True, program_settings={"budget": 3, "protocol": args.protocol})
    retriever = build_retriever(config, True)
    setups = {}
    for name in variants:  # each variant's LMs and engine are its own
        roles = build_roles(config)
        engine = engine_of(roles.answer.lm)
        engine.slots = VARIANTS[name][0]
        # a server of the variant's own: two variants with one slot would otherwise share the process's server, and
        # the second would find the first's prompts in the host prompt cache
        engine._server = new_server(engine.model_path, engine.n_ctx, engine.server_threads, slots=engine.slots)
        setups[name] = {m: build_program(m, config, retriever, roles) for m in methods}
    questions = [e for _, e in question_set(args.questions, 0, args.seed)]
    rounds = [questions[i:i + args.round] for i in range(0, len(questions), args.round)]
    done = {(r["variant"], r["round"]) for r in read_jsonl(rows_path)}
    bar = tqdm(total=len(rounds) * len(variants), initial=len(done), unit="round x variant")
    with rows_path.open("a") as out:
        for number, examples in enumerate(rounds):
            for name in variants if number % 2 == 0 else variants[::-1]:
                if (name, number) in done:
                    continue
                programs, tasks = setups[name], [(m, e) for e in examples for m in methods]
                started = time.perf_counter()
                rows = [row for _, row in run_parallel(lambda task, p=programs: run_one(p[task[0]], task[1], task[0]),
                                                       tasks, VARIANTS[name][1])]
                wall = round(time.perf_counter() - started, 3)
                for row in rows:
                    out.write(json.dumps({**row, "variant": name, "round": number, "round_wall": wall}) + "\n")
                out.flush()
                bar.update(1)
    bar.close()


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.open()] if path.is_file() else []


def table(rows: list[dict], variants: list[str], methods: list[str], command: str) -> str:
    """Per variant: total wall clock over the rounds every variant finished, answers per minute, per-answer seconds
    (median and mean, per method) and replies equal to `1x1`'s."""
    rounds = set.intersection(*({r["round"] for r in rows if r["variant"] == v} for v in variants))
    picked = [r for r in rows if r["round"] in rounds]
    by = {(r["variant"], r["method"], r["question_id"]): r for r in picked}
    walls = {v: sum({r["round"]: r["round_wall"] for r in picked if r["variant"] == v}.values()) for v in variants}
    answers = len([r for r in picked if r["variant"] == variants[0]])
    lines = [f"Command: `{command}`", "",
             f"{len(rounds)} rounds, {answers} answers per variant ({', '.join(methods)}); errors: "
             f"{sum(bool(r.get('error')) for r in picked)}.", "",
             "| variant | slots | in flight | wall clock s | × 1x1 | answers/min | "
             + " | ".join(f"{m} s/answer median (mean)" for m in methods) + " | replies as 1x1 |",
             "|---|---:|---:|---:|---:|---:|" + "---:|" * len(methods) + "---:|"]
    for v in variants:
        own = [r for r in picked if r["variant"] == v]
        per_method = []
        for m in methods:
            seconds = [r["seconds"] for r in own if r["method"] == m]
            per_method.append(f"{median(seconds):.1f} ({mean(seconds):.1f})" if seconds else "–")
        base = {k: r for k, r in by.items() if k[0] == "1x1"}
        same = sum(all(r.get(f) == base.get(("1x1", r["method"], r["question_id"]), {}).get(f) for f in REPLY_FIELDS)
                   for r in own) if base else 0
        slots, flight = VARIANTS[v]
        ratio = f"{walls[v] / walls['1x1']:.2f}" if walls.get("1x1") else "–"
        lines.append(f"| {v} | {slots} | {flight} | {walls[v]:.0f} | {ratio} | {60 * len(own) / walls[v]:.2f} | "
                     + " | ".join(per_method) + f" | {same}/{len(own)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/slots-ab"))
    parser.add_argument("--questions", type=int, default=16)
    parser.add_argument("--round", type=int, default=4, help="questions per round (each variant answers a round)")
    parser.add_argument("--methods", default="rag,chr")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--protocol", default="fast", choices=("fast", "paper"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--table-only", action="store_true", help="redraw the table from the rows (no LM)")
    args = parser.parse_args(argv)
    variants, methods = args.variants.split(","), args.methods.split(",")
    if unknown := [v for v in variants if v not in VARIANTS]:
        parser.error(f"unknown variant: {', '.join(unknown)} (variants: {', '.join(VARIANTS)})")
    args.out.mkdir(parents=True, exist_ok=True)
    rows_path, command_path = args.out / "rows.jsonl", args.out / "command.txt"
    if not args.table_only:
        command_path.write_text(" ".join(["python", "bench/slots_ab.py", *(argv if argv is not None else
                                                                           sys.argv[1:])]))
        run(args, variants, methods, rows_path)
    text = table(read_jsonl(rows_path), variants, methods, command_path.read_text() if command_path.is_file() else "?")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
