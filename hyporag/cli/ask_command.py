"""`hyporag ask`: one question through one method (or a frozen program), with its passages and cost."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

from hyporag.cli.common import add_data_args, add_lm_args, add_program_args
from hyporag.foundation.errors import HyporagError
from hyporag.foundation.redact import printable
from hyporag.jobs.builders import (
    artifact_config,
    build_program,
    build_retriever,
    build_roles,
    fit_to_context,
    load_frozen,
)
from hyporag.jobs.run_config import RunConfig
from hyporag.programs.registry import method_entry


def add_parser(sub) -> None:
    ask = sub.add_parser("ask", help="answer one question")
    add_data_args(ask)
    add_lm_args(ask)
    add_program_args(ask)
    ask.add_argument("--question", required=True)
    ask.add_argument("--option", action="append", default=[], metavar="LETTER=TEXT", required=True)
    ask.add_argument("--method", help="default rag (or the --program's own)")
    ask.add_argument("--json", action="store_true", help="print the full prediction as JSON")
    ask.add_argument("--program", help="a frozen artifact directory (from `hyporag compile`/`tune --out`)")


def _parse_options(raw: list[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    given: dict[str, str] = {}
    for item in raw:
        letter, sep, text = item.partition("=")
        if not sep or len(letter.strip()) != 1 or not letter.strip().isalpha() or not text.strip():
            raise HyporagError(f"--option {item!r}: expected LETTER=TEXT, e.g. --option A=Liver")
        key = letter.strip().upper()
        if key in options:  # never keep one and drop the other: the dropped one may be the right answer
            raise HyporagError(f"--option {item!r}: letter {key} was already given ({given[key]!r}); "
                               "each option needs its own letter")
        options[key], given[key] = text.strip(), item
    if len(options) < 2:
        raise HyporagError("--option: give at least two options")
    return dict(sorted(options.items()))


def run(args: argparse.Namespace, config: RunConfig) -> int:
    import dspy


    if not args.question.strip():
        raise HyporagError("--question: the question is empty")
    options = _parse_options(args.option)
    if config.control.program:
        config = artifact_config(config)
    roles = build_roles(config)
    if config.control.program:
        program = load_frozen(config, roles)
    else:
        method = args.method or "rag"
        method_entry(method)  # an unknown name is refused before anything loads
        program = build_program(method, config, build_retriever(config, method_entry(method).program.uses_retrieval),
                                roles)
    probe = dspy.Example(id="ask", question=args.question, options=options)
    fit_to_context([probe], lambda example: "--question", {program.method: program}, roles, config)
    started = time.perf_counter()
    if sys.stderr.isatty():  # a person waiting at a terminal: say what is happening (CPU models take minutes)
        print(f"asking {program.method} with {roles.answer.spec} (a CPU model takes seconds to minutes a call; "
              f"{program.calls_per_question:g} calls expected)...", file=sys.stderr, flush=True)
    prediction = program(question=args.question, options=options)
    seconds = time.perf_counter() - started
    # passages and LM text are untrusted: nothing they hold may reach the terminal as a control sequence
    if args.json:  # JSON escapes C0 controls itself; C1 ones (0x80-0x9f) are escaped the same way here
        text = json.dumps(dict(prediction.items()), indent=2, ensure_ascii=False)
        print(re.sub(r"[\x7f-\x9f]", lambda m: f"\\u{ord(m.group()):04x}", text))
        return 0
    answer = prediction.answer
    print(printable(f"answer: {answer}. {options[answer]}") if answer else "answer: (unparseable reply)")
    for i, passage in enumerate(prediction.passages, start=1):
        print(printable(f"  [{i}] {passage['id']} ({passage['score']:.3f}): {passage['contents'][:110]}..."))
    if prediction.queries:
        print(printable("queries: " + " | ".join(q[:80] for q in prediction.queries)))
    cost = prediction.cost
    print(f"cost: {cost['calls']} LM calls, {cost['input_tokens']} input + {cost['output_tokens']} output tokens, "
          f"{seconds:.1f} s (method {program.method}, retrieval sees options: {prediction.retrieval_sees_options})")
    return 0
