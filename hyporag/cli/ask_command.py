"""`hyporag ask`: one question through one method (or a frozen program), with its passages and cost: the flags made
into `AskSettings` and a `RunConfig`, then `hyporag.ask`."""

from __future__ import annotations

import argparse
import json
import re
import sys

from hyporag.cli.common import add_data_args, add_lm_args, add_program_args, add_settings, load_settings
from hyporag.foundation.redact import printable
from hyporag.jobs.ask import ask
from hyporag.jobs.run_groups import RunControl
from hyporag.jobs.settings import AskSettings


def add_parser(sub) -> None:
    parser = sub.add_parser("ask", help="answer one question")
    add_data_args(parser)
    add_lm_args(parser)
    add_program_args(parser)
    add_settings(parser, AskSettings)
    add_settings(parser, RunControl, only=("program",), helps={"program": "a frozen artifact directory (from "
                                                                          "`hyporag compile`/`tune --out`)"})


def run(args: argparse.Namespace) -> int:
    config, settings = load_settings(args, AskSettings)
    result = ask(settings, config, progress=sys.stderr.isatty())  # a person at a terminal: say what is happening
    prediction, options = result.prediction, settings.options
    # passages and LM text are untrusted: nothing they hold may reach the terminal as a control sequence
    if settings.json_output:  # JSON escapes C0 controls itself; C1 ones (0x80-0x9f) are escaped the same way here
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
          f"{result.seconds:.1f} s (method {result.method}, retrieval sees options: "
          f"{prediction.retrieval_sees_options})")
    return 0
