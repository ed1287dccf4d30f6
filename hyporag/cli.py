"""`hyporag` command line: data, index, ask, eval, demo.

User errors (bad files, unknown names, mismatched indexes) print one line and exit 2; `--debug` shows tracebacks.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

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
    group.add_argument("--max-tokens", type=int, default=512)
    group.add_argument("--timeout", type=float, help="seconds to wait for a remote LM reply")
    group.add_argument("--retries", type=int, default=3, help="retries with backoff for a remote LM (DSPy's)")
    group.add_argument("--no-cache", action="store_true", help="bypass DSPy's disk cache of LM calls")


def _add_program_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("retrieval and program")
    group.add_argument("--corpus", default="medcorp-local")
    group.add_argument("--index-dir", help="index directory (default: the cache's indexes/<corpus>)")
    group.add_argument("--retriever", choices=("bm25", "dense", "hybrid"), help="default: whatever the index holds")
    group.add_argument("--faiss", default="flat", choices=("flat", "hnsw", "ivf"))
    group.add_argument("--budget", type=int, default=15, help="final context size B in passages (paper: 15)")
    group.add_argument("--reasoning", action="store_true", help="answer with step-by-step reasoning first")
    group.add_argument("--options-visible", dest="sees_options", action="store_const", const=True, default=None,
                       help="let retrieval see the options (default: per method; HCQR/CHR do, baselines do not)")
    group.add_argument("--question-only", dest="sees_options", action="store_const", const=False,
                       help="MIRAGE's rule: retrieval sees the question only")
    group.add_argument("--lam", type=float, default=1.0, help="CHR's fixed λ")


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

    ask = sub.add_parser("ask", help="answer one question")
    _add_data_args(ask)
    _add_lm_args(ask)
    _add_program_args(ask)
    ask.add_argument("--question", required=True)
    ask.add_argument("--option", action="append", default=[], metavar="LETTER=TEXT", required=True)
    ask.add_argument("--method", default="rag")
    ask.add_argument("--json", action="store_true", help="print the full prediction as JSON")

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
    ev.add_argument("--dur", action="store_true", help="judge each context (Entailed/Useful/NotUseful) with --judge-lm")
    ev.add_argument("--fail-under", action="append", default=[], metavar="METHOD=ACC",
                    help="exit 1 when METHOD's accuracy is below ACC (repeatable): a CI gate")
    ev.add_argument("--junit", metavar="PATH", help="write a JUnit XML file, one test case per method")

    demo = sub.add_parser("demo", help="the main job on embedded defaults, sized to finish in ~5 minutes")
    _add_data_args(demo)
    demo.add_argument("--lm", default=None)
    demo.add_argument("--out", default="runs/demo")
    return parser


def _roles(args: argparse.Namespace):
    from hyporag.programs.lm import LMRoles, configure_cache

    configure_cache(enabled=not args.no_cache)
    return LMRoles.from_specs(args.lm, args.hypothesis_lm, args.answer_lm, args.judge_lm, api_base=args.api_base,
                              api_key=args.api_key, max_tokens=args.max_tokens, cache=not args.no_cache,
                              timeout=args.timeout, num_retries=args.retries)


def _retriever(args: argparse.Namespace, needed: bool):
    if not needed:
        return None
    from hyporag.retrieval import build_index, default_index_dir, load_corpus, open_index

    corpus = load_corpus(args.corpus, args.data_dir)
    directory = Path(args.index_dir) if args.index_dir else default_index_dir(corpus.name)
    if not (directory / "manifest.json").is_file():
        print(f"no index at {directory}: building a BM25 index of {corpus.name} first (once, ~10 s)", file=sys.stderr)
        build_index(corpus, directory, retriever="bm25", progress=False, log=lambda m: print(m, file=sys.stderr))
    return open_index(directory, corpus=corpus, mode=args.retriever, faiss_kind=args.faiss)


def _program(method: str, args: argparse.Namespace, retriever, roles):
    from hyporag.programs import make_program
    from hyporag.programs.registry import METHODS
    from hyporag.retrieval import LambdaSchedule

    if method not in METHODS:
        raise HyporagError(f"unknown method {method!r}: use one of {', '.join(METHODS)}")
    kwargs = {"retriever": retriever, "roles": roles, "budget": args.budget, "reasoning": args.reasoning,
              "retrieval_sees_options": args.sees_options}
    if method == "chr":
        kwargs["schedule"] = LambdaSchedule("fixed", lam=args.lam)
    return make_program(method, **kwargs)


def _parse_options(raw: list[str]) -> dict[str, str]:
    options = {}
    for item in raw:
        letter, sep, text = item.partition("=")
        if not sep or len(letter.strip()) != 1 or not letter.strip().isalpha() or not text.strip():
            raise HyporagError(f"--option {item!r}: expected LETTER=TEXT, e.g. --option A=Liver")
        options[letter.strip().upper()] = text.strip()
    if len(options) < 2:
        raise HyporagError("--option: give at least two options")
    return dict(sorted(options.items()))


def cmd_data_list(args: argparse.Namespace) -> int:
    from hyporag.eval.datasets import BENCHMARKS, load_benchmark
    from hyporag.retrieval.corpus import CORPORA, load_corpus

    for name in BENCHMARKS:
        try:
            report = load_benchmark(name, args.data_dir)
            print(f"dataset  {name:<14} {len(report.examples):>6}  {report.source}")
        except HyporagError as exc:
            print(f"dataset  {name:<14} {'-':>6}  unavailable: {exc}")
    for name in CORPORA:
        try:
            corpus = load_corpus(name, args.data_dir)
            print(f"corpus   {name:<14} {corpus.count():>6}  {corpus.source} ({len(corpus.files)} files)")
        except HyporagError as exc:
            print(f"corpus   {name:<14} {'-':>6}  unavailable: {exc}")
    return 0


def cmd_index_build(args: argparse.Namespace) -> int:
    from hyporag.retrieval import build_index, load_corpus

    corpus = load_corpus(args.corpus, args.data_dir)
    started = time.perf_counter()
    directory = build_index(corpus, Path(args.index_dir) if args.index_dir else None, retriever=args.retriever,
                            embedder_name=args.embedder, faiss_kind=args.faiss, max_seq_length=args.max_seq_length)
    print(f"index ready at {directory} ({time.perf_counter() - started:.1f} s)")
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    from hyporag.programs.registry import METHODS

    options = _parse_options(args.option)
    if args.method not in METHODS:
        raise HyporagError(f"unknown method {args.method!r}: use one of {', '.join(METHODS)}")
    roles = _roles(args)
    program = _program(args.method, args, _retriever(args, args.method != "cot"), roles)
    started = time.perf_counter()
    prediction = program(question=args.question, options=options)
    seconds = time.perf_counter() - started
    if args.json:
        print(json.dumps(dict(prediction.items()), indent=2, ensure_ascii=False))
        return 0
    answer = prediction.answer
    print(f"answer: {answer}. {options[answer]}" if answer else "answer: (unparseable reply)")
    for i, passage in enumerate(prediction.passages, start=1):
        print(f"  [{i}] {passage['id']} ({passage['score']:.3f}): {passage['contents'][:110]}...")
    if prediction.queries:
        print("queries: " + " | ".join(q[:80] for q in prediction.queries))
    cost = prediction.cost
    print(f"cost: {cost['calls']} LM calls, {cost['input_tokens']} input + {cost['output_tokens']} output tokens, "
          f"{seconds:.1f} s (method {args.method}, retrieval sees options: {prediction.retrieval_sees_options})")
    return 0


def select_examples(examples: list, limit: int | None, seed: int) -> list:
    """A seeded shuffle, then the first `limit`: the same questions for every method and every re-run."""
    order = list(examples)
    random.Random(seed).shuffle(order)
    return order[:limit] if limit else order


def cmd_eval(args: argparse.Namespace) -> int:
    from hyporag.eval import runner
    from hyporag.eval.ci_gate import check_bars, parse_bars, write_junit
    from hyporag.eval.datasets import load_benchmark
    from hyporag.eval.judge import ContextJudge
    from hyporag.eval.report import markdown

    bars = parse_bars(args.fail_under)
    report = load_benchmark(args.dataset, args.data_dir, skip_bad_rows=args.skip_bad_rows)
    if report.skipped:
        print(f"skipped {len(report.skipped)} bad rows (first: {report.skipped[0]})", file=sys.stderr)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    examples = select_examples(report.examples, args.limit, args.seed)
    roles = _roles(args)
    retriever = _retriever(args, any(m != "cot" for m in methods))
    programs = {m: _program(m, args, retriever, roles) for m in methods}
    out = Path(args.out or Path("runs") / Path(args.dataset).stem)
    settings = {"dataset": args.dataset, "dataset_source": report.source, "n": len(examples), "seed": args.seed,
                "methods": methods, "lms": roles.specs(), "budget": args.budget, "reasoning": args.reasoning,
                "retriever": getattr(retriever, "mode", None), "dur": args.dur,
                "index_fingerprint": getattr(retriever, "fingerprint", None),
                "program": {m: p.settings() for m, p in programs.items()}}
    runner.DEBUG = args.debug
    judge = ContextJudge(roles.judge) if args.dur else None
    result = runner.run_evaluation(programs, examples, out, settings, threads=args.threads, judge=judge)
    print(markdown(result))
    print(f"results: {out}/results.jsonl, summary.json, summary.md, summary.csv"
          + "".join(f", {Path(p).name}" for p in result.get("plots", [])))
    if args.junit:
        write_junit(args.junit, result["methods"], bars, suite=f"hyporag-eval-{Path(args.dataset).stem}")
    failures = check_bars(result["methods"], bars)
    for failure in failures:
        print(f"hyporag: below bar: {failure}", file=sys.stderr)
    return 1 if failures else 0


def cmd_demo(args: argparse.Namespace) -> int:
    """The main job: a small side-by-side run sized for ~5 minutes of a 2-core CPU with the embedded 1.5B."""
    questions, budget, methods = 8, 3, "cot,rag,chr"
    print(f"demo: {questions} mmlu-med-dev questions, methods {methods}, context budget B={budget} passages "
          "(the paper uses 15; on 2 CPU cores the 1.5B model reads ~50 prompt tokens/s, so B=3 keeps this under "
          "5 minutes; re-runs are served from cache)")
    argv = ["eval", "--dataset", "mmlu-med-dev", "--methods", methods, "--limit", str(questions),
            "--budget", str(budget), "--out", args.out]
    if args.lm:
        argv += ["--lm", args.lm]
    if args.data_dir:
        argv += ["--data-dir", args.data_dir]
    return main(argv)


COMMANDS = {"list": cmd_data_list, "build": cmd_index_build, "ask": cmd_ask, "eval": cmd_eval, "demo": cmd_demo}


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
    except Exception as exc:
        from dspy.utils.exceptions import LMError

        if args.debug or not isinstance(exc, LMError):
            raise
        print(f"hyporag: error: LM backend: {str(exc).splitlines()[0][:300]}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("hyporag: interrupted; re-run the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
