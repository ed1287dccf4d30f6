"""What every command builds from its flags: LM roles, the retriever, programs and frozen artifacts."""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from hyporag.errors import HyporagError


def roles_from_args(args: argparse.Namespace):
    from hyporag.programs.lm import LMRoles, configure_cache

    configure_cache(enabled=not args.no_cache)
    return LMRoles.from_specs(args.lm, args.hypothesis_lm, args.answer_lm, args.judge_lm, adapter=args.adapter,
                              **lm_build_kwargs(args))


def lm_build_kwargs(args: argparse.Namespace) -> dict:
    """The `build_lm` settings every LM built from the command line shares (endpoint, key, limits, cache)."""
    return {"api_base": args.api_base, "api_key": args.api_key, "max_tokens": args.max_tokens,
            "cache": not args.no_cache, "timeout": args.timeout, "num_retries": args.retries}


DEFAULT_CORPUS = "medcorp-local"


def retriever_from_args(args: argparse.Namespace, needed: bool, recorded: dict | None = None):
    """The index to search: --corpus / --index-dir when given, else what a frozen artifact `recorded`, else the
    local medical corpus. A missing default index is built (BM25, seconds)."""
    if not needed:
        return None
    from hyporag.retrieval import build_index, default_index_dir, load_corpus, open_index

    recorded = recorded or {}
    corpus = load_corpus(args.corpus or recorded.get("corpus_spec") or DEFAULT_CORPUS, args.data_dir)
    saved_dir = recorded.get("index_dir") if not args.corpus else None
    if args.index_dir:
        directory = Path(args.index_dir)
    elif saved_dir and (Path(saved_dir) / "manifest.json").is_file():
        directory = Path(saved_dir)
    else:
        directory = default_index_dir(corpus)
    mode = args.retriever or recorded.get("mode")
    if not (directory / "manifest.json").is_file():
        if mode not in (None, "bm25"):  # embedding takes long enough that it must be asked for
            raise HyporagError(f"no index at {directory}; build one with `hyporag index build --corpus {corpus.spec} "
                               f"--retriever {'dense' if mode == 'dense' else 'both'}`")
        print(f"no index at {directory}: building a BM25 index of {corpus.name} first (once, ~10 s)", file=sys.stderr)
        build_index(corpus, directory, retriever="bm25", progress=False, log=lambda m: print(m, file=sys.stderr))
    return open_index(directory, corpus=corpus, mode=mode, faiss_kind=args.faiss, rrf_k=args.rrf_k)


def program_from_args(method: str, args: argparse.Namespace, retriever, roles):
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


def frozen_from_args(args: argparse.Namespace, roles):
    """Load a frozen artifact on the index it was compiled against (its corpus and index unless --corpus or
    --index-dir say otherwise)."""
    from hyporag.optimizers.artifact import load_artifact, read_artifact_manifest

    manifest = read_artifact_manifest(args.program)
    needs_retrieval = manifest["method"] != "cot"
    return load_artifact(args.program, retriever_from_args(args, needs_retrieval, manifest["retrieval"]), roles)


def fit_to_context(examples: list, where, programs: dict, roles, args: argparse.Namespace) -> tuple[list, str]:
    """The examples whose largest answer prompt fits the answer LM's window (refused or skipped otherwise), and a
    note of what was checked for the run's settings."""
    from hyporag.eval.prompt_fit import check_prompts_fit
    from hyporag.programs.context_window import context_window

    window = context_window(roles.answer.lm, args.context_tokens, args.api_base)
    report = check_prompts_fit(examples, where, programs, window, args.max_tokens,
                               getattr(args, "skip_bad_rows", False))
    if report.skipped:
        print(f"skipped {len(report.skipped)} question(s) too long for the context (first: {report.skipped[0]})",
              file=sys.stderr)
    if not report.checked:
        return report.kept, f"not checked: the context window of {window.model} is unknown (give --context-tokens)"
    counted = "exact" if window.exact else f"estimated at {window.chars_per_token:g} characters a token"
    return report.kept, f"{window.limit} tokens ({counted}); {len(report.skipped)} question(s) skipped"


def select_examples(examples: list, limit: int | None, seed: int) -> list:
    """A seeded shuffle, then the first `limit`: the same questions for every method and every re-run."""
    order = list(examples)
    random.Random(seed).shuffle(order)
    return order[:limit] if limit else order
