"""`hyporag` command line: the parser and the dispatch (commands live in cli_commands and cli_optimize).

User errors (bad files, unknown names, mismatched indexes) print one line and exit 2; `--debug` shows tracebacks.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from pathlib import Path

from hyporag.cli_commands import cmd_ask, cmd_data_list, cmd_demo, cmd_eval, cmd_index_build, cmd_report
from hyporag.cli_fit import cmd_fit
from hyporag.cli_optimize import cmd_compile, cmd_tune
from hyporag.cli_reproduce import add_reproduce_parser, cmd_reproduce
from hyporag.errors import DiskFullError, HyporagError
from hyporag.programs.registry import CONFIGS
from hyporag.retrieval.dense import FAISS_KINDS
from hyporag.retrieval.retriever import MODES
from hyporag.run_config import PROJECT_FILE, RunConfig, build_run_config, read_project_file


def _add_data_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", help="local data root (default: $HYPORAG_DATA_DIR, then ../shared/data)")


def _add_lm_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("language models (DSPy/LiteLLM strings or local:<alias|file.gguf>)")
    group.add_argument("--lm", help="every role (default local:qwen2.5-coder-1.5b)")
    group.add_argument("--hypothesis-lm", help="hypotheses, rewrites, pseudo-documents, reranking")
    group.add_argument("--answer-lm", help="the answer step")
    group.add_argument("--judge-lm", help="the DUR judge")
    group.add_argument("--api-base", help="OpenAI-compatible server URL (vLLM, Ollama, llama.cpp, ...)")
    group.add_argument("--api-key", help="API key (default: the provider's environment variable)")
    group.add_argument("--max-tokens", type=int, help="reply tokens per call, reserved in the context (default 512)")
    group.add_argument("--context-tokens", type=int, help="the answer LM's context window (default: n_ctx for local "
                       "models, the server's or DSPy's model metadata for remote ones; unknown = not checked)")
    group.add_argument("--timeout", type=float, help="seconds to wait for each remote LM reply (default 120)")
    group.add_argument("--retries", type=int, help="retries with backoff for a remote LM (DSPy's; default 3)")
    group.add_argument("--no-cache", action="store_const", const=True, help="bypass DSPy's disk cache of LM calls")
    group.add_argument("--adapter", choices=("auto", "lean", "json", "chat"),
                       help="DSPy adapter: auto (default) = lean for local models under --protocol fast, JSON for "
                       "local ones under paper and for --api-base servers, else Chat")


def _add_program_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("retrieval")
    group.add_argument("--corpus", help="corpus name or JSONL path/dir (default: a --program's own corpus, else "
                       "medcorp-local)")
    group.add_argument("--index-dir", help="index directory (default: the cache's indexes/<corpus>-<source hash>)")
    group.add_argument("--retriever", choices=MODES, help="default: whatever the index holds")
    group.add_argument("--faiss", choices=FAISS_KINDS, help="FAISS index kind for dense search (default flat)")
    group.add_argument("--nprobe", type=int, help="IVF indexes: lists searched per query (default lists / 16, at "
                       "most 128; more = closer to exact search, slower)")
    group.add_argument("--embedder", help="check that the index's vectors were made by this encoder (queries always "
                       "use the index's own query side; another is refused)")
    group.add_argument("--rrf-k", type=int, help="reciprocal-rank-fusion constant for hybrid retrieval (default 60; "
                       "MedRAG fuses with 100)")
    group.add_argument("--fuse-index", action="append", metavar="DIR", help="another index of the same corpus whose "
                       "dense side (another encoder) hybrid search fuses in by RRF (repeatable)")
    group = parser.add_argument_group("program settings (each applies to the methods that have it)")
    group.add_argument("--options-visible", dest="retrieval_sees_options", action="store_const", const=True,
                       help="let retrieval see the options (default: per method; HCQR/CHR do, baselines do not)")
    group.add_argument("--question-only", dest="retrieval_sees_options", action="store_const", const=False,
                       help="MIRAGE's rule: retrieval sees the question only")
    seen: set[str] = set()
    for config in CONFIGS:  # every method's config declares its own flags
        for name, spec in config.cli_flags().items():
            if name not in seen:
                seen.add(name)
                group.add_argument(name, **spec)


def _add_model_and_program_args(parser: argparse.ArgumentParser) -> None:
    _add_data_args(parser)
    _add_lm_args(parser)
    _add_program_args(parser)


def _add_run_args(parser: argparse.ArgumentParser, dataset_help: str | None) -> None:
    """The run flags; `dataset_help` None: the command names its datasets itself (reproduce)."""
    if dataset_help:
        parser.add_argument("--dataset", help=dataset_help)
    parser.add_argument("--limit", type=int, help="first N questions after a seeded shuffle")
    parser.add_argument("--seed", type=int, help="shuffle and split seed (default 0)")
    parser.add_argument("--threads", type=int, help="questions answered at once (default 1)")
    parser.add_argument("--skip-bad-rows", action="store_const", const=True,
                        help="skip (and count) bad rows and over-long questions instead of stopping")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hyporag", description=__doc__)
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--config", help=f"project file (default ./{PROJECT_FILE} when it exists)")
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
    build.add_argument("--retriever", choices=("bm25", "dense", "both"), help="default bm25 (both with --vectors)")
    build.add_argument("--index-dir")
    build.add_argument("--embedder", help="dense encoder: minilm (default), medcpt, bge-large, e5-large-v2, any "
                       "sentence-transformers name or path, or a JSON file of encoder-spec fields")
    build.add_argument("--faiss", default="flat", choices=FAISS_KINDS, help="flat (exact), hnsw, ivf, ivfpq (d/4 "
                       "bytes a vector, memory-mapped), opq-ivfpq (rotated first)")
    build.add_argument("--max-seq-length", type=int, help="truncate passages for the embedder (MiniLM default 256)")
    build.add_argument("--vectors", help="precomputed passage vectors (a folder of .npy shards with their ids, or "
                       "MedRAG's index/<encoder>/embedding folder) to use instead of embedding; give the --embedder "
                       "that made them")
    build.add_argument("--force", action="store_true", help="replace an index of another corpus in --index-dir")

    ask = sub.add_parser("ask", help="answer one question")
    _add_data_args(ask)
    _add_lm_args(ask)
    _add_program_args(ask)
    ask.add_argument("--question", required=True)
    ask.add_argument("--option", action="append", default=[], metavar="LETTER=TEXT", required=True)
    ask.add_argument("--method", help="default rag (or the --program's own)")
    ask.add_argument("--json", action="store_true", help="print the full prediction as JSON")
    ask.add_argument("--program", help="a frozen artifact directory (from `hyporag compile`/`tune --out`)")

    ev = sub.add_parser("eval", help="evaluate methods side by side")
    _add_data_args(ev)
    _add_lm_args(ev)
    _add_program_args(ev)
    _add_run_args(ev, "benchmark name or a .jsonl/.csv path (required here or in the project file)")
    ev.add_argument("--methods", help="comma-separated methods (default cot,rag)")
    ev.add_argument("--out", help="results directory (default runs/<dataset>)")
    ev.add_argument("--program", help="evaluate a frozen artifact directory (its method; --methods is ignored)")
    ev.add_argument("--dur", action="store_const", const=True,
                    help="judge each context (Entailed/Useful/NotUseful) with --judge-lm")
    ev.add_argument("--fail-under", action="append", default=[], metavar="METHOD=ACC",
                    help="exit 1 when METHOD's accuracy is below ACC (repeatable): a CI gate")
    ev.add_argument("--junit", metavar="PATH", help="write a JUnit XML file, one test case per method")

    report = sub.add_parser("report", help="redraw a results directory's tables and plots (no LM; works mid-run)")
    report.add_argument("run_dir", help="the --out directory of `hyporag eval`")

    for name, helptext in (("compile", "tune a program's prompts with a DSPy teleprompter and freeze it"),
                           ("tune", "tune λ / schedule / k / merge / retriever with a resumable Optuna study"),
                           ("fit", "index, split, tune, compile, freeze and evaluate a program for a new domain")):
        opt = sub.add_parser(name, help=helptext)
        _add_data_args(opt)
        _add_lm_args(opt)
        _add_program_args(opt)
        _add_run_args(opt, "dev set to split (default medqa-dev); never a test split")
        opt.add_argument("--method", help="method to optimize (implied by --program)")
        opt.add_argument("--metric", choices=("accuracy", "dur", "combined"), default="accuracy")
        opt.add_argument("--allow-test", action="store_true", help="permit tuning on a test split (don't)")
        opt.add_argument("--program", help="start from a frozen artifact directory")
        opt.add_argument("--out", help="artifact directory to write")
        if name != "fit":
            opt.add_argument("--val-fraction", type=float, default=0.3)
            opt.add_argument("--trainset", help="explicit train set (name or file) instead of splitting --dataset")
            opt.add_argument("--valset", help="explicit validation set (name or file)")
        if name != "tune":
            opt.add_argument("--optimizer", choices=("bootstrap", "bootstrap-rs", "mipro", "gepa"),
                             default="bootstrap")
            opt.add_argument("--auto", choices=("light", "medium", "heavy"), default="light")
            opt.add_argument("--max-demos", type=int, default=2)
            opt.add_argument("--max-metric-calls", type=int, help="GEPA: stop after this many program runs instead "
                             "of an --auto preset (each run is a full program call)")
            opt.add_argument("--reflection-lm", help="LM that writes new instructions (GEPA's reflection, "
                             "MIPROv2's prompt model); default the hypothesis LM")
        if name != "compile":
            opt.add_argument("--trials", type=int, default=20 if name == "tune" else 6)
            opt.add_argument("--storage", help="journal file path or RDB URL (postgresql://...); default a journal "
                             "file under runs/studies/ (fit: inside --out)")
            opt.add_argument("--modes", default=None, help="retriever modes to search, e.g. bm25,dense,hybrid")
            opt.add_argument("--heartbeat", type=int, default=10, help="RDB storages: seconds between a worker's "
                             "heartbeats; a trial silent for 3 heartbeats is failed and re-queued once")
    sub.choices["tune"].add_argument("--study", required=True)
    sub.choices["tune"].add_argument("--report", action="store_true",
                                     help="print the best trials and write history/importance PNGs")
    fit = sub.choices["fit"]
    fit.add_argument("--splits", default="0.5,0.25,0.25", help="train,validation,held-out fractions (seeded)")
    fit.add_argument("--skip-prompts", action="store_true", help="tune the numbers only (no teleprompter stage)")

    reproduce = add_reproduce_parser(sub)
    _add_model_and_program_args(reproduce)
    _add_run_args(reproduce, None)

    demo = sub.add_parser("demo", help="the main job on embedded defaults, sized to finish in ~5 minutes")
    _add_data_args(demo)
    demo.add_argument("--lm")
    demo.add_argument("--out", default="runs/demo")
    return parser


COMMANDS = {"list": cmd_data_list, "build": cmd_index_build, "ask": cmd_ask, "eval": cmd_eval, "report": cmd_report,
            "demo": cmd_demo, "compile": cmd_compile, "tune": cmd_tune, "fit": cmd_fit, "reproduce": cmd_reproduce}
ROUTING = {"command", "data_command", "index_command", "config"}


def run_config(args: argparse.Namespace) -> RunConfig:
    """The run's settings: defaults < project file < the flags given (argparse leaves the others None)."""
    project, path = read_project_file(Path(args.config) if args.config else None)
    return build_run_config({k: v for k, v in vars(args).items() if k not in ROUTING}, project, path)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    key = getattr(args, "data_command", None) or getattr(args, "index_command", None) or args.command
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        return COMMANDS[key](args, run_config(args))
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

        if not args.debug and isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            print(f"hyporag: error: {exc.filename or 'a file'}: disk full while writing ({exc.strerror}); free space "
                  "and re-run the same command (finished work is kept)", file=sys.stderr)
            return DiskFullError.exit_code
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
