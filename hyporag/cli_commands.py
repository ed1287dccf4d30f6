"""`hyporag data list`, `index build`, `ask`, `eval`, `report` and `demo`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from hyporag.builders import (
    artifact_config,
    build_program,
    build_retriever,
    build_roles,
    fit_to_context,
    load_frozen,
    select_examples,
)
from hyporag.errors import HyporagError
from hyporag.run_config import RunConfig


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


def _describe_dataset(report) -> tuple[int, str]:
    return len(report.examples), report.source


def _describe_corpus(corpus) -> tuple[int, str]:
    return corpus.count(), f"{corpus.source} ({len(corpus.files)} files)"


def cmd_data_list(args: argparse.Namespace, config: RunConfig) -> int:
    from hyporag.eval.datasets import BENCHMARKS, load_benchmark
    from hyporag.retrieval.corpus import CORPORA, load_corpus
    from hyporag.retrieval.hub_corpus import HUB_CORPORA

    loaders = [("dataset", n, lambda n: _describe_dataset(load_benchmark(n, config.data_dir))) for n in BENCHMARKS]
    loaders += [("corpus", n, lambda n: _describe_corpus(load_corpus(n, config.data_dir))) for n in CORPORA]
    for kind, name, describe in loaders:
        try:
            count, source = describe(name)
        except HyporagError as exc:
            count, source = "-", f"unavailable: {exc}"
        print(f"{kind:<8} {name:<14} {count:>6}  {source}")
    for name, hub_ids in HUB_CORPORA.items():  # listed, not downloaded: PubMed alone is 23.9M snippets
        if name not in CORPORA:
            print(f"{'corpus':<8} {name:<14} {'-':>6}  hub {', '.join(hub_ids)} (streamed into the cache on first use)")
    return 0


def cmd_index_build(args: argparse.Namespace, config: RunConfig) -> int:
    from hyporag.retrieval import build_index, load_corpus
    from hyporag.retrieval.embedder import DEFAULT_EMBEDDER

    corpus = load_corpus(config.corpus or "medcorp-local", config.data_dir)
    started = time.perf_counter()
    retriever = args.retriever or ("both" if args.vectors else "bm25")
    if args.vectors and retriever == "bm25":
        raise HyporagError("index build: --vectors are dense vectors; use --retriever dense or both")
    directory = build_index(corpus, Path(config.index_dir) if config.index_dir else None, retriever=retriever,
                            embedder_name=config.embedder or DEFAULT_EMBEDDER, faiss_kind=config.faiss,
                            max_seq_length=args.max_seq_length, force=args.force,
                            vectors=Path(args.vectors) if args.vectors else None)
    print(f"index ready at {directory} ({time.perf_counter() - started:.1f} s)")
    return 0


def cmd_ask(args: argparse.Namespace, config: RunConfig) -> int:
    import dspy

    from hyporag.programs.registry import method_entry

    if not args.question.strip():
        raise HyporagError("--question: the question is empty")
    options = _parse_options(args.option)
    if config.program:
        config = artifact_config(config)
    roles = build_roles(config)
    if config.program:
        program = load_frozen(config, roles)
    else:
        method = args.method or "rag"
        method_entry(method)  # an unknown name is refused before anything loads
        program = build_program(method, config, build_retriever(config, method != "cot"), roles)
    probe = dspy.Example(id="ask", question=args.question, options=options)
    fit_to_context([probe], lambda example: "--question", {program.method: program}, roles, config)
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
          f"{seconds:.1f} s (method {program.method}, retrieval sees options: {prediction.retrieval_sees_options})")
    return 0


def cmd_eval(args: argparse.Namespace, config: RunConfig) -> int:
    if not config.dataset:
        raise HyporagError("eval: give --dataset (a benchmark name or a .jsonl/.csv path), or set it in hyporag.toml")
    return evaluate_methods(config, args.fail_under, args.junit)


def evaluate_methods(config: RunConfig, fail_under: list[str] | None = None, junit: str | None = None) -> int:
    """Run the configured methods (or a frozen --program) side by side; the exit status a CI gate reads."""
    from hyporag.eval.ci_gate import check_bars, parse_bars, refuse_unknown_bars, write_junit, write_junit_error
    from hyporag.eval.report import markdown

    bars = parse_bars(fail_under or [])
    if bars:
        refuse_unknown_bars(bars, [f"{_artifact_method(config)}@{Path(config.program).name}"] if config.program
                            else config.method_list)
    suite = f"hyporag-eval-{Path(config.dataset).stem}"
    try:
        result, out, _ = run_methods(config)
    except (HyporagError, KeyboardInterrupt) as exc:
        if junit:  # every outcome writes the file: an older one must never stand for this run
            code = 130 if isinstance(exc, KeyboardInterrupt) else exc.exit_code
            write_junit_error(junit, suite, str(exc) or "interrupted", code)
        raise
    print(markdown(result))
    print(f"results: {out}/results.jsonl, summary.json, summary.md, summary.csv"
          + "".join(f", {Path(p).name}" for p in result.get("plots", [])))
    if junit:
        write_junit(junit, result["methods"], bars, suite=suite)
    failures = check_bars(result["methods"], bars)
    for failure in failures:
        print(f"hyporag: below bar: {failure}", file=sys.stderr)
    return 1 if failures else 0


def _artifact_method(config: RunConfig) -> str:
    from hyporag.optimizers.artifact import read_artifact_manifest

    return read_artifact_manifest(config.program)["method"]


def run_methods(config: RunConfig, progress: bool = True) -> tuple[dict, Path, int]:
    """Evaluate (resuming) and return (report, results dir, questions in the dataset)."""
    from hyporag.eval import runner
    from hyporag.eval.datasets import load_benchmark
    from hyporag.programs.judge import ContextJudge

    report = load_benchmark(config.dataset, config.data_dir, skip_bad_rows=config.skip_bad_rows)
    if report.skipped:
        print(f"skipped {len(report.skipped)} bad rows (first: {report.skipped[0]})", file=sys.stderr)
    examples = select_examples(report.examples, config.limit, config.seed)
    if config.program:
        config = artifact_config(config)
    roles = build_roles(config)
    if config.program:
        frozen = load_frozen(config, roles)
        retriever, programs = frozen.retriever, {f"{frozen.method}@{Path(config.program).name}": frozen}
    else:
        methods = config.method_list
        retriever = build_retriever(config, any(m != "cot" for m in methods))
        programs = {m: build_program(m, config, retriever, roles) for m in methods}
    planned = len(examples)
    examples, context_check = fit_to_context(examples, report.where, programs, roles, config)
    if not examples:
        raise HyporagError(f"{config.dataset}: no question fits the context of {roles.answer.spec}")
    out = Path(config.out or Path("runs") / Path(config.dataset).stem)
    # what the programs really run with (a --program brings its own budget and answer step, not the flags')
    settings = {"dataset": config.dataset, "dataset_source": report.source, "n": len(examples), "seed": config.seed,
                "methods": list(programs), "lms": roles.specs(), "lm_identities": roles.identities(),
                "adapters": roles.adapters(),
                "budget": _shared(programs, "budget"), "reasoning": _shared(programs, "reasoning"),
                "retriever": getattr(retriever, "mode", None), "dur": config.dur,
                "index_fingerprint": getattr(retriever, "fingerprint", None),
                "program": {m: p.settings() for m, p in programs.items()},
                "effective": {m: p.effective_settings() for m, p in programs.items()},
                "skipped_too_long": planned - len(examples), "context_check": context_check}
    judge = ContextJudge(roles.judge) if config.dur else None
    result = runner.run_evaluation(programs, examples, out, settings, threads=config.threads, judge=judge,
                                   progress=progress, debug=config.debug)
    return result, out, len(report.examples)


def _shared(programs: dict, key: str):
    """One setting across the run's programs: its value when they agree, else the value per method."""
    values = {m: p.settings()[key] for m, p in programs.items()}
    distinct = {json.dumps(v, sort_keys=True) for v in values.values()}
    return next(iter(values.values())) if len(distinct) == 1 else values


def cmd_report(args: argparse.Namespace, config: RunConfig) -> int:
    from hyporag.eval.report import markdown, report_from_dir

    result = report_from_dir(args.run_dir)
    print(markdown(result))
    print(f"written: {args.run_dir}/summary.json, summary.md, summary.csv"
          + "".join(f", {Path(p).name}" for p in result.get("plots", [])))
    return 0


DEMO_QUESTIONS, DEMO_METHODS = 16, "cot,rag,chr"  # ~20 s a question with the lean adapter (docs/speed.md)


def cmd_demo(args: argparse.Namespace, config: RunConfig) -> int:
    """The main job: a side-by-side run sized for ~5 minutes of a 2-core CPU with the embedded 1.5B, led by what a
    newcomer should see: accuracy beside how often the correct option's text reached the context."""
    from hyporag.eval.report import cell, markdown

    questions, budget, methods = DEMO_QUESTIONS, 3, DEMO_METHODS
    print(f"demo: {questions} mmlu-med-dev questions, methods {methods}, context budget B={budget} passages, "
          "fast protocol (no reasoning step: on 2 CPU cores the 1.5B model reads ~75 prompt tokens/s; the paper "
          "uses B=15 and reasoning, `--protocol paper`); re-runs are served from cache")
    demo = config.replace(dataset="mmlu-med-dev", methods=methods, limit=questions, out=args.out,
                          program_settings={**config.program_settings, "budget": budget})
    result, out, _ = run_methods(demo)
    print(markdown(result))
    print("| method | accuracy | 95% CI | correct option's text in context | s/q |\n|---|---:|---|---:|---:|")
    for s in result["methods"]:
        print(f"| {s['method']} | {s['accuracy']:.3f} | {s['ci95_low']:.2f}–{s['ci95_high']:.2f} | "
              f"{cell(s['gold_in_context'], '{:.2f}')} | {s['seconds_per_q']:.1f} |")
    print("Retrieval helps only when the passages separate the options: the context column says how often the "
          f"correct option's text was in them. Rows: {out}/results.jsonl; tables: summary.md")
    return 0
