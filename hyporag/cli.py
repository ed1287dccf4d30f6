"""`hyporag` command line: the parser and the dispatch (commands live in cli_commands and cli_optimize).

User errors (bad files, unknown names, mismatched indexes) print one line and exit 2; `--debug` shows tracebacks.
"""

from __future__ import annotations

import argparse
import os
import sys

from hyporag.cli_commands import cmd_ask, cmd_data_list, cmd_demo, cmd_eval, cmd_index_build, cmd_report
from hyporag.cli_optimize import cmd_compile, cmd_tune
from hyporag.errors import HyporagError


def _add_data_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", help="local data root (default: $HYPORAG_DATA_DIR, then ../shared/data)")


def _add_lm_args(parser: argparse.ArgumentParser) -> None:
    from hyporag.programs.lm import DEFAULT_LM

    group = parser.add_argument_group("language models (DSPy/LiteLLM strings or local:<alias|file.gguf>)")
    group.add_argument("--lm", default=DEFAULT_LM, help=f"every role (default {DEFAULT_LM})")
    group.add_argument("--hypothesis-lm", help="hypotheses, rewrites, pseudo-documents, reranking")
    group.add_argument("--answer-lm", help="the answer step")
    group.add_argument("--judge-lm", help="the DUR judge")
    group.add_argument("--api-base", help="OpenAI-compatible server URL (vLLM, Ollama, ...)")
    group.add_argument("--api-key", help="API key (default: the provider's environment variable)")
    group.add_argument("--max-tokens", type=int, default=512, help="reply tokens per call (reserved in the context)")
    group.add_argument("--context-tokens", type=int, help="the answer LM's context window (default: n_ctx for local "
                       "models, DSPy's model metadata for remote ones; unknown = not checked)")
    group.add_argument("--timeout", type=float, help="seconds to wait for each remote LM reply (default 120)")
    group.add_argument("--retries", type=int, default=3, help="retries with backoff for a remote LM (DSPy's)")
    group.add_argument("--no-cache", action="store_true", help="bypass DSPy's disk cache of LM calls")
    group.add_argument("--adapter", choices=("auto", "json", "chat"), default="auto",
                       help="DSPy adapter: auto = JSON for local models and --api-base servers, ChatAdapter else")


def _add_program_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("retrieval and program")
    group.add_argument("--corpus", help="corpus name or JSONL path/dir (default: a --program's own corpus, else "
                       "medcorp-local)")
    group.add_argument("--index-dir", help="index directory (default: the cache's indexes/<corpus>-<source hash>)")
    group.add_argument("--retriever", choices=("bm25", "dense", "hybrid"), help="default: whatever the index holds")
    group.add_argument("--faiss", default="flat", choices=("flat", "hnsw", "ivf"))
    group.add_argument("--budget", type=int, default=15, help="final context size B in passages (paper: 15)")
    group.add_argument("--reasoning", action="store_true", help="answer with step-by-step reasoning first")
    group.add_argument("--options-visible", dest="sees_options", action="store_const", const=True, default=None,
                       help="let retrieval see the options (default: per method; HCQR/CHR do, baselines do not)")
    group.add_argument("--question-only", dest="sees_options", action="store_const", const=False,
                       help="MIRAGE's rule: retrieval sees the question only")
    group.add_argument("--lam", type=float, default=1.0, help="CHR's fixed λ (or lam_max of an adaptive schedule)")
    group.add_argument("--schedule", choices=("fixed", "linear", "threshold", "sigmoid"), default="fixed",
                       help="CHR's λ schedule over cos(H+, H-)")
    group.add_argument("--per-query-k", type=int, help="HCQR: passages retrieved per query before the merge")
    group.add_argument("--merge-policy", choices=("round_robin", "score"), default="round_robin")
    group.add_argument("--hyde-docs", type=int, default=1, help="HyDE: hypothetical documents per question")
    group.add_argument("--rrf-k", type=int, default=60, help="reciprocal-rank-fusion constant for hybrid retrieval")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hyporag", description=__doc__)
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)

    data = sub.add_parser("data", help="datasets and corpora")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    listing = data_sub.add_parser("list", help="one line per dataset and corpus: name, records, source")
    _add_data_args(listing)

    index = sub.add_parser("index", help="retrieval indexes")
    index_sub = index.add_subparsers(dest="index_command", required=True)
    build = index_sub.add_parser("build", help="build (or resume building) an index")
    _add_data_args(build)
    build.add_argument("--corpus", default="medcorp-local")
    build.add_argument("--retriever", choices=("bm25", "dense", "both"), default="bm25")
    build.add_argument("--index-dir")
    build.add_argument("--embedder", default="all-MiniLM-L6-v2")
    build.add_argument("--faiss", default="flat", choices=("flat", "hnsw", "ivf"))
    build.add_argument("--max-seq-length", type=int, help="truncate passages for the embedder (MiniLM default 256)")
    build.add_argument("--force", action="store_true", help="replace an index of another corpus in --index-dir")

    ask = sub.add_parser("ask", help="answer one question")
    _add_data_args(ask)
    _add_lm_args(ask)
    _add_program_args(ask)
    ask.add_argument("--question", required=True)
    ask.add_argument("--option", action="append", default=[], metavar="LETTER=TEXT", required=True)
    ask.add_argument("--method", default="rag")
    ask.add_argument("--json", action="store_true", help="print the full prediction as JSON")
    ask.add_argument("--program", help="a frozen artifact directory (from `hyporag compile`/`tune --out`)")

    ev = sub.add_parser("eval", help="evaluate methods side by side")
    _add_data_args(ev)
    _add_lm_args(ev)
    _add_program_args(ev)
    ev.add_argument("--dataset", required=True, help="benchmark name or a .jsonl/.csv path")
    ev.add_argument("--methods", default="cot,rag")
    ev.add_argument("--limit", type=int, help="first N questions after a seeded shuffle")
    ev.add_argument("--seed", type=int, default=0)
    ev.add_argument("--threads", type=int, default=1)
    ev.add_argument("--out", help="results directory (default runs/<dataset>)")
    ev.add_argument("--skip-bad-rows", action="store_true")
    ev.add_argument("--program", help="evaluate a frozen artifact directory (its method; --methods is ignored)")
    ev.add_argument("--dur", action="store_true", help="judge each context (Entailed/Useful/NotUseful) with --judge-lm")
    ev.add_argument("--fail-under", action="append", default=[], metavar="METHOD=ACC",
                    help="exit 1 when METHOD's accuracy is below ACC (repeatable): a CI gate")
    ev.add_argument("--junit", metavar="PATH", help="write a JUnit XML file, one test case per method")

    report = sub.add_parser("report", help="redraw a results directory's tables and plots (no LM; works mid-run)")
    report.add_argument("run_dir", help="the --out directory of `hyporag eval`")

    for name, helptext in (("compile", "tune a program's prompts with a DSPy teleprompter and freeze it"),
                           ("tune", "tune λ / schedule / k / merge / retriever with a resumable Optuna study")):
        opt = sub.add_parser(name, help=helptext)
        _add_data_args(opt)
        _add_lm_args(opt)
        _add_program_args(opt)
        opt.add_argument("--method", required=True)
        opt.add_argument("--dataset", default="medqa-dev", help="dev set to split into train and validation")
        opt.add_argument("--val-fraction", type=float, default=0.3)
        opt.add_argument("--trainset", help="explicit train set (name or file) instead of splitting --dataset")
        opt.add_argument("--valset", help="explicit validation set (name or file)")
        opt.add_argument("--limit", type=int, help="use only the first N questions of the dev set (seeded shuffle)")
        opt.add_argument("--seed", type=int, default=0)
        opt.add_argument("--threads", type=int, default=1)
        opt.add_argument("--metric", choices=("accuracy", "dur", "combined"), default="accuracy")
        opt.add_argument("--allow-test", action="store_true", help="permit tuning on a test split (don't)")
        opt.add_argument("--program", help="start from a frozen artifact directory")
        opt.add_argument("--out", help="artifact directory to write")
    comp = sub.choices["compile"]
    comp.add_argument("--optimizer", choices=("bootstrap", "bootstrap-rs", "mipro", "gepa"), default="bootstrap")
    comp.add_argument("--auto", choices=("light", "medium", "heavy"), default="light")
    comp.add_argument("--max-demos", type=int, default=2)
    comp.add_argument("--max-metric-calls", type=int, help="GEPA: stop after this many program runs instead of an "
                      "--auto preset (each run is a full program call)")
    comp.add_argument("--reflection-lm", help="LM that writes new instructions (GEPA's reflection, MIPROv2's prompt "
                      "model); default the hypothesis LM. A 1.5B model mostly restates the old instruction")
    tune = sub.choices["tune"]
    tune.add_argument("--study", required=True)
    tune.add_argument("--trials", type=int, default=20)
    tune.add_argument("--storage", help="journal file path or RDB URL (postgresql://...); default a journal file "
                      "under runs/studies/")
    tune.add_argument("--modes", default=None, help="retriever modes to search, e.g. bm25,dense,hybrid")
    tune.add_argument("--heartbeat", type=int, default=10, help="RDB storages: seconds between a worker's "
                      "heartbeats; a trial silent for 3 heartbeats is failed and re-queued once")
    tune.add_argument("--report", action="store_true", help="print the best trials and write history/importance PNGs")

    demo = sub.add_parser("demo", help="the main job on embedded defaults, sized to finish in ~5 minutes")
    _add_data_args(demo)
    demo.add_argument("--lm", default=None)
    demo.add_argument("--out", default="runs/demo")
    return parser


COMMANDS = {"list": cmd_data_list, "build": cmd_index_build, "ask": cmd_ask, "eval": cmd_eval, "report": cmd_report,
            "demo": cmd_demo,
            "compile": cmd_compile, "tune": cmd_tune}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    key = getattr(args, "data_command", None) or getattr(args, "index_command", None) or args.command
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        return COMMANDS[key](args)
    except HyporagError as exc:
        if args.debug:
            raise
        print(f"hyporag: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # `hyporag data list | head`: the reader left, which is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:
        from dspy.utils.exceptions import LMError

        if args.debug or not isinstance(exc, LMError):
            raise
        from hyporag.programs.lm import explain_lm_error

        print(f"hyporag: error: LM backend: {explain_lm_error(exc)}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("hyporag: interrupted; re-run the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
