"""Do speculative decoding's replies equal plain decoding's on the requests hyporag really sends? The embedded model
answers cot, hcqr and chr on a few questions under each protocol on a fresh plain server, every request is recorded,
and the same requests go, in the same order, to one fresh server per mode, `none` included: plain against plain is
the control (the same requests leave every server's prompt cache in the same states, so a difference there would be
llama.cpp's own nondeterminism, not the mode's). Requests and each mode's replies are kept in --out; a re-run
resumes mode by mode.
    .venv/bin/python bench/speculative_exactness.py --out runs/spec-exact --questions 5
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

MODES = ("none", "ngram", "ngram-mod", "draft")


def record(out: Path, questions: int, protocols: list[str], methods: list[str], seed: int) -> list[dict]:
    """Every request of `methods` on the first `questions` questions of bench/speed_ab.py's set, per protocol,
    answered by a fresh plain server of the default embedded model."""
    from speed_ab import question_set
    from tqdm import tqdm

    from hyporag import RunConfig, build_program, build_retriever, build_roles
    from hyporag.lm import engine_of, new_server
    from hyporag.testing import RecordingServer

    examples = [e for _, e in question_set(questions, 0, seed)]
    recorder, rows = None, []
    bar = tqdm(total=len(examples) * len(protocols) * len(methods), unit="answer", desc="record")
    for protocol in protocols:
        config = RunConfig(no_cache=True, program_settings={"budget": 3, "protocol": protocol})
        retriever = build_retriever(config, True)
        roles = build_roles(config)
        engine = engine_of(roles.answer.lm)
        if recorder is None:
            recorder = RecordingServer(new_server(engine.model_path, engine.n_ctx, engine.server_threads, 0, 0))
        engine._server = recorder  # this test's own server: nothing earlier in the process is in its cache
        for method in methods:
            program = build_program(method, config, retriever, roles)
            for example in examples:
                first = len(recorder.calls)
                program(question=example.question, options=example.options)
                rows += [{"protocol": protocol, "method": method, "question_id": example.id, "body": body,
                          "reply": reply} for body, reply in recorder.calls[first:]]
                bar.update(1)
        engine._server = None
    bar.close()
    write_atomic(out / "server.json", json.dumps({"model_path": str(engine.model_path), "n_ctx": engine.n_ctx,
                                                  "threads": engine.server_threads}))
    write_atomic(out / "requests.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    return rows


def replay_mode(rows: list[dict], mode: str, setup: dict) -> dict:
    """The replies of a fresh server decoding with `mode` (no host cache, as the recording server) and its counts
    of drafted and accepted tokens."""
    from tqdm import tqdm

    from hyporag.lm import new_server
    from hyporag.testing import replay, reply_text

    server = new_server(Path(setup["model_path"]), setup["n_ctx"], setup["threads"], 0, 0, mode)
    started = time.perf_counter()
    results = replay(server, tqdm([row["body"] for row in rows], unit="call", desc=mode))
    timings = [(r.get("timings") or {}) if isinstance(r, dict) else {} for r in results]
    return {"mode": mode, "seconds": round(time.perf_counter() - started, 1),
            "replies": [reply_text(r) for r in results],
            "draft_n": sum(t.get("draft_n") or 0 for t in timings),
            "draft_n_accepted": sum(t.get("draft_n_accepted") or 0 for t in timings)}


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def first_difference(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def table(rows: list[dict], results: dict[str, dict], command: str) -> str:
    """Per mode, protocol and method: replies that differ from the recording server's (plain, fresh)."""
    lines = [f"Command: `{command}`", "",
             f"{len({r['question_id'] for r in rows})} questions, {len(rows)} recorded requests; each mode's replies "
             "against the recording server's (a fresh plain server; `none` is a second one, the control).", "",
             "| mode | protocol | method | calls | differing replies | differing answers | first difference at "
             "(chars, median) | replay s |", "|---|---|---|---:|---:|---:|---:|---:|"]
    groups = sorted({(r["protocol"], r["method"]) for r in rows}, key=lambda g: (g[0], g[1]))
    for mode, result in results.items():
        for protocol, method in groups:
            picked = [i for i, r in enumerate(rows) if (r["protocol"], r["method"]) == (protocol, method)]
            differ = [i for i in picked if result["replies"][i] != rows[i]["reply"]]
            questions = {rows[i]["question_id"] for i in differ}
            offsets = sorted(first_difference(result["replies"][i], rows[i]["reply"]) for i in differ)
            median = str(offsets[len(offsets) // 2]) if offsets else "–"
            lines.append(f"| {mode} | {protocol} | {method} | {len(picked)} | {len(differ)} | "
                         f"{len(questions)}/{len({rows[i]['question_id'] for i in picked})} q | {median} | "
                         f"{result['seconds']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/spec-exact"))
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--protocols", default="fast,paper")
    parser.add_argument("--methods", default="cot,hcqr,chr")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    if unknown := [m for m in modes if m not in MODES]:
        parser.error(f"unknown mode: {', '.join(unknown)} (modes: {', '.join(MODES)})")
    args.out.mkdir(parents=True, exist_ok=True)
    command = " ".join(["python", "bench/speculative_exactness.py", *(argv if argv is not None else sys.argv[1:])])
    requests = args.out / "requests.jsonl"
    if requests.is_file():
        rows = [json.loads(line) for line in requests.open()]
    else:
        rows = record(args.out, args.questions, args.protocols.split(","), args.methods.split(","), args.seed)
    results = {}
    for mode in modes:
        path = args.out / f"replies-{mode}.json"
        if not path.is_file():
            write_atomic(path, json.dumps(replay_mode(rows, mode, json.loads((args.out / "server.json").read_text()))))
        results[mode] = json.loads(path.read_text())
    text = table(rows, results, command)
    write_atomic(args.out / "table.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
