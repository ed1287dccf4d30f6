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
    tune = sub.choices["tune"]
    tune.add_argument("--study", required=True)
    tune.add_argument("--trials", type=int, default=20)
    tune.add_argument("--storage", help="journal file path or RDB URL (postgresql://...); default a journal file "
                      "under runs/studies/")
    tune.add_argument("--modes", default=None, help="retriever modes to search, e.g. bm25,dense,hybrid")
    tune.add_argument("--report", action="store_true", help="print the best trials and write history/importance PNGs")

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
    return open_index(directory, corpus=corpus, mode=args.retriever, faiss_kind=args.faiss, rrf_k=args.rrf_k)


def _program(method: str, args: argparse.Namespace, retriever, roles):
    from hyporag.programs import make_program
    from hyporag.programs.registry import METHODS
    from hyporag.retrieval import LambdaSchedule

    if method not in METHODS:
        raise HyporagError(f"unknown method {method!r}: use one of {', '.join(METHODS)}")
    kwargs = {"retriever": retriever, "roles": roles, "budget": args.budget, "reasoning": args.reasoning}
    if args.sees_options is not None:  # unset keeps the method's own rule (and ablations' presets)
        kwargs["retrieval_sees_options"] = args.sees_options
    if method == "chr":  # the named schedules (chr-linear, ...) keep their own defaults
        kwargs["schedule"] = LambdaSchedule(args.schedule, lam=args.lam, lam_max=args.lam)
    elif method == "hyde":
        kwargs["num_documents"] = args.hyde_docs
    elif method.startswith("hcqr"):
        kwargs.update(per_query_k=args.per_query_k, merge_policy=args.merge_policy)
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


def _describe_dataset(report) -> tuple[int, str]:
    return len(report.examples), report.source


def _describe_corpus(corpus) -> tuple[int, str]:
    return corpus.count(), f"{corpus.source} ({len(corpus.files)} files)"


def cmd_data_list(args: argparse.Namespace) -> int:
    from hyporag.eval.datasets import BENCHMARKS, load_benchmark
    from hyporag.retrieval.corpus import CORPORA, load_corpus

    loaders = [("dataset", n, lambda n: _describe_dataset(load_benchmark(n, args.data_dir))) for n in BENCHMARKS]
    loaders += [("corpus", n, lambda n: _describe_corpus(load_corpus(n, args.data_dir))) for n in CORPORA]
    for kind, name, describe in loaders:
        try:
            count, source = describe(name)
        except HyporagError as exc:
            count, source = "-", f"unavailable: {exc}"
        print(f"{kind:<8} {name:<14} {count:>6}  {source}")
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
    if args.program:
        program = _frozen(args, roles)
    else:
        program = _program(args.method, args, _retriever(args, args.method != "cot"), roles)
    started = time.perf_counter()
    prediction = program(question=args.question, options=options)
    seconds = time.perf_counter() - started
    if args.json:
        print(json.dumps(dict(prediction.items()), indent=2, ensure_ascii=False))
        return 0
    answer = prediction.answer
    print(f"answer: {answer}. {options[answer]}" if answer else "answer: (unparseable reply)")
    args.method = program.method
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
    if args.program:
        frozen = _frozen(args, roles)
        retriever, programs = frozen.retriever, {f"{frozen.method}@{Path(args.program).name}": frozen}
        methods = list(programs)
    else:
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


def _frozen(args: argparse.Namespace, roles):
    """Load a frozen artifact on the index it was compiled against (its corpus unless --corpus says otherwise)."""
    from hyporag.optimizers.artifact import load_artifact, read_artifact_manifest

    manifest = read_artifact_manifest(args.program)
    corpus = manifest["retrieval"].get("corpus")
    if corpus and args.corpus == "medcorp-local":
        args.corpus = corpus
    if args.retriever is None:
        args.retriever = manifest["retrieval"].get("mode")
    needs_retrieval = manifest["method"] != "cot"
    return load_artifact(args.program, _retriever(args, needs_retrieval), roles)


def _splits(args: argparse.Namespace) -> tuple[list, list, dict]:
    from hyporag.eval.datasets import load_benchmark
    from hyporag.optimizers.splits import refuse_test_split, split_train_val

    if args.trainset or args.valset:
        if not (args.trainset and args.valset):
            raise HyporagError("--trainset and --valset go together")
        for name in (args.trainset, args.valset):
            refuse_test_split(name, args.allow_test)
        train = load_benchmark(args.trainset, args.data_dir).examples
        val = load_benchmark(args.valset, args.data_dir).examples
        if {e.id for e in train} & {e.id for e in val} and args.trainset == args.valset:
            raise HyporagError("--trainset and --valset are the same set: give disjoint splits")
        return train, val, {"train": args.trainset, "val": args.valset, "train_size": len(train),
                            "val_size": len(val)}
    refuse_test_split(args.dataset, args.allow_test)
    examples = select_examples(load_benchmark(args.dataset, args.data_dir).examples, args.limit, args.seed)
    train, val = split_train_val(examples, args.val_fraction, args.seed)
    return train, val, {"dataset": args.dataset, "val_fraction": args.val_fraction, "seed": args.seed,
                        "limit": args.limit, "train_size": len(train), "val_size": len(val)}


def _metric(args: argparse.Namespace, roles):
    from hyporag.eval.judge import ContextJudge
    from hyporag.eval.metric_fns import make_metric

    return make_metric(args.metric, ContextJudge(roles.judge) if args.metric != "accuracy" else None)


def _base_program(args: argparse.Namespace, roles):
    """The program to optimize: a frozen artifact (--program) or a fresh one for --method."""
    if args.program:
        return _frozen(args, roles)
    return _program(args.method, args, _retriever(args, args.method != "cot"), roles)


def _variant(base, roles, overrides: dict):
    """`base` with some constructor settings replaced, keeping its tuned prompts and demos (one per Optuna trial)."""
    from hyporag.optimizers.artifact import constructor_kwargs
    from hyporag.programs import make_program

    program = make_program(base.method, retriever=base.retriever, roles=roles,
                           **{**constructor_kwargs(base.settings()), **overrides})
    program.load_state(base.dump_state())
    return program


def cmd_compile(args: argparse.Namespace) -> int:
    from hyporag.optimizers.artifact import save_artifact
    from hyporag.optimizers.compile import compile_program

    roles = _roles(args)
    train, val, split = _splits(args)
    program = _base_program(args, roles)
    metric = _metric(args, roles)
    print(f"compile {program.method} with {args.optimizer} on {split['train_size']} train / {split['val_size']} val "
          f"questions, metric {args.metric}", file=sys.stderr)
    result = compile_program(program, train, val, args.optimizer, metric, roles, auto=args.auto,
                             max_demos=args.max_demos, seed=args.seed, threads=args.threads)
    out = Path(args.out or Path("artifacts") / f"{program.method}-{args.optimizer}")
    save_artifact(out, result.program, program.retriever, roles.specs(), {
        "optimizer": result.settings, "metric": args.metric, "splits": split,
        "validation": {"before": result.before, "after": result.after},
        "cost": {"seconds": round(result.seconds, 1), "lm_calls": result.calls}})
    print(f"validation {args.metric}: {result.before:.3f} -> {result.after:.3f} "
          f"({result.seconds:.0f} s, {result.calls} LM calls); frozen to {out}")
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from hyporag.optimizers.artifact import save_artifact
    from hyporag.optimizers.tune import open_study, recover_stale_trials, run_study, study_report, suggest

    roles = _roles(args)
    study = open_study(args.study, args.storage, args.seed, Path("runs") / "studies")
    if args.report:
        for row in study_report(study, Path("runs") / "studies"):
            print(f"trial {row['trial']:>3}  {row['value']:.3f}  {row['params']}")
        print(f"plots: runs/studies/{args.study}-history.png, runs/studies/{args.study}-importance.png")
        return 0
    _, val, split = _splits(args)
    metric = _metric(args, roles)
    probe = _base_program(args, roles)
    available = [m for m in ("bm25", "dense", "hybrid") if _mode_available(probe.retriever, m)]
    modes = [m for m in (args.modes.split(",") if args.modes else available) if m in available]
    if not modes:
        raise HyporagError(f"none of the requested retriever modes are in the index (it has {', '.join(available)})")
    recovered = recover_stale_trials(study)
    if recovered:
        print(f"re-queued {recovered} trial(s) left running by a killed worker", file=sys.stderr)
    study.set_user_attr("method", args.method)
    run_study(study, lambda kwargs: _variant(probe, roles, kwargs), val, metric, probe.method, modes,
              args.budget, args.trials)
    best = study.best_trial
    print(f"best trial {best.number}: {args.metric} {best.value:.3f} with {best.params}")
    if args.out:
        import optuna

        program = _variant(probe, roles, suggest(optuna.trial.FixedTrial(best.params), probe.method, modes,
                                                 args.budget))
        save_artifact(args.out, program, program.retriever, roles.specs(), {
            "optimizer": {"name": "optuna-tpe", "study": args.study, "trials": len(study.trials), "seed": args.seed,
                          "best_params": best.params},
            "metric": args.metric, "splits": split, "validation": {"after": best.value}})
        print(f"frozen best trial to {args.out}")
    return 0


def _mode_available(retriever, mode: str) -> bool:
    try:
        retriever._check(mode)
    except ValueError:
        return False
    return True


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


COMMANDS = {"list": cmd_data_list, "build": cmd_index_build, "ask": cmd_ask, "eval": cmd_eval, "demo": cmd_demo,
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
        print(f"hyporag: error: LM backend: {str(exc).splitlines()[0][:300]}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("hyporag: interrupted; re-run the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
