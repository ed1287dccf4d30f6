"""What every command (and the API) builds from a RunConfig: LM roles, the retriever, programs, frozen artifacts."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from hyporag.eval.prompt_fit import check_prompts_fit
from hyporag.foundation.errors import HyporagError
from hyporag.jobs.run_config import DEFAULT_CORPUS, RunConfig, where
from hyporag.lm.client import ROLES, LMRoles, configure_cache
from hyporag.lm.context_window import context_window
from hyporag.lm.engine_rules import engine_rules
from hyporag.optimizers.artifact import load_artifact, read_artifact_manifest
from hyporag.programs.registry import make_program, method_config, method_entry
from hyporag.retrieval import build_index, default_index_dir, load_corpus, open_index
from hyporag.retrieval.index import MANIFEST, is_complete, read_manifest


def build_roles(config: RunConfig):
    configure_cache(enabled=not config.lms.no_cache)
    lms = config.lms
    return LMRoles.from_specs(lms.lm, lms.hypothesis_lm, lms.answer_lm, lms.judge_lm, adapter=lms.adapter,
                              local_adapter=engine_rules(config.protocol.name).local_adapter,
                              role_api_bases={role: config.lms.endpoints(role) for role in ROLES},
                              **lm_build_kwargs(config))


def lm_build_kwargs(config: RunConfig) -> dict:
    """The `build_lm` settings every LM built from the command line shares (endpoint, key, limits, cache)."""
    return {"api_base": config.lms.endpoints(), "api_key": config.lms.api_key, "max_tokens": config.lms.max_tokens,
            "cache": not config.lms.no_cache, "timeout": config.lms.timeout, "num_retries": config.lms.retries,
            # the protocol decides whether the embedded engine caps outputs (long reasoning is not cut, as on a server)
            "cap_outputs": engine_rules(config.protocol.name).caps_engine_output, "speculative": config.lms.speculative}


def build_retriever(config: RunConfig, needed: bool, recorded: dict | None = None):
    """The index to search: --corpus / --index-dir when given, else what a frozen artifact `recorded`, else the
    local medical corpus. A missing default index is built (BM25, seconds)."""
    if not needed:
        return None

    recorded = recorded or {}
    corpus = load_corpus(config.data.corpus or recorded.get("corpus_spec") or DEFAULT_CORPUS, config.data.data_dir)
    saved_dir = recorded.get("index_dir") if not config.data.corpus else None
    if config.index.index_dir:
        directory = Path(config.index.index_dir)
    elif saved_dir and (Path(saved_dir) / "manifest.json").is_file():
        directory = Path(saved_dir)
    else:
        directory = default_index_dir(corpus)
    mode = config.index.retriever or recorded.get("mode")
    # a frozen program's engine is asked for too: its index rebuilt by another engine is refused, never run silently
    engine = config.index.bm25_engine if config.index.bm25_engine != "auto" else recorded.get("bm25_engine") or "auto"
    search = config.index.bm25_search or recorded.get("bm25_search") or "exact"
    if not _finished_index(directory):  # absent, or a first-use build that was interrupted: this command resumes it
        if mode not in (None, "bm25"):  # embedding takes long enough that it must be asked for
            raise HyporagError(f"no index at {directory}; build one with `hyporag index build --corpus {corpus.spec} "
                               f"--retriever {'dense' if mode == 'dense' else 'both'}`")
        print(f"no finished index at {directory}: building a BM25 index of {corpus.name} first (once, ~10 s; an "
              "interrupted build resumes here)", file=sys.stderr)
        build_index(corpus, directory, retriever="bm25", progress=False, log=lambda m: print(m, file=sys.stderr),
                    bm25_engine=engine, bm25_search=search)
    retriever = open_index(directory, corpus=corpus, mode=mode, faiss_kind=config.index.faiss, rrf_k=config.index.rrf_k,
                           asked_encoder=config.index.embedder, nprobe=config.index.nprobe, asked_bm25_engine=engine,
                           bm25_search=search)
    if config.index.fuse_index:
        retriever.fuse_with([open_index(Path(d), corpus=corpus, mode="dense", faiss_kind=config.index.faiss,
                                        nprobe=config.index.nprobe) for d in config.index.fuse_index])
    return retriever


def _finished_index(directory: Path) -> bool:
    if not (directory / MANIFEST).is_file():
        return False
    try:
        return is_complete(read_manifest(directory))
    except HyporagError:
        return True  # a damaged manifest is reported by open_index, naming the file and the command


def build_program(method: str, run: RunConfig, retriever, roles):
    """The method with the typed config the run gives it (its preset and the shared program settings it has)."""

    return make_program(method, retriever=retriever, roles=roles, config=run.config_for(method))


def artifact_config(run: RunConfig) -> RunConfig:
    """The run's config for a frozen `--program`: its own program settings, protocol included, so the LM roles are
    built as the freezing process built them (the embedded engine's output cap follows the protocol), and its one
    method the frozen typed config. A program setting given with --program that makes a different config than the
    artifact's is refused, naming where it came from: a frozen program is evaluated as it was frozen, never
    silently as something else."""
    program = run.control.program
    manifest = read_artifact_manifest(program)
    method, frozen = manifest["method"], manifest["program_settings"]
    source = f"{program}: program_settings"
    frozen_config = method_config(method, frozen, source=source, strict=True)
    for key, value in run.program_settings.items():
        origin = run.sources.get(key, "command line")
        if key not in frozen_config.__dataclass_fields__:
            if origin == "command line":
                raise HyporagError(f"{where(origin, key)}: the frozen {method} program in {program} has no such "
                                   "setting; drop the flag")
            continue
        if method_config(method, {**frozen, key: value}, source=where(origin, key), strict=True) != frozen_config:
            raise HyporagError(f"{where(origin, key)} = {value!r} differs from the frozen program's {key} = "
                               f"{frozen[key]!r} ({program}); a frozen program runs with its own settings: "
                               "drop the setting, or fit/compile a new program with it")
    return run.replace(program_settings=dict(frozen), methods=((method, frozen_config),))


def load_frozen(config: RunConfig, roles):
    """Load a frozen artifact on the index it was compiled against (its corpus and index unless --corpus or
    --index-dir say otherwise)."""

    manifest = read_artifact_manifest(config.control.program)
    if config.lms.adapter == "auto":
        roles.use_adapters(manifest.get("adapters"))
    needs_retrieval = method_entry(manifest["method"]).program.uses_retrieval  # the class says, not its name
    return load_artifact(config.control.program, build_retriever(config, needs_retrieval, manifest["retrieval"]), roles)


def fit_to_context(examples: list, where, programs: dict, roles, config: RunConfig) -> tuple[list, str]:
    """The examples whose largest answer prompt fits the answer LM's window (refused or skipped otherwise), and a
    note of what was checked for the run's settings."""

    lms = config.lms
    window = context_window(roles.answer.lm, lms.context_tokens, next(iter(lms.endpoints("answer")), None))
    report = check_prompts_fit(examples, where, programs, window, config.lms.max_tokens, config.data.skip_bad_rows)
    if report.skipped:
        print(f"skipped {len(report.skipped)} question(s) too long for the context (first: {report.skipped[0]})",
              file=sys.stderr)
    if not report.checked:
        return report.kept, f"not checked: the context window of {window.model} is unknown (give --context-tokens)"
    counted = "exact" if window.exact else f"estimated at {window.chars_per_token:g} characters a token"
    return report.kept, f"{window.limit} tokens ({counted}); {len(report.skipped)} question(s) skipped"


def select_examples(examples: list, limit: int | None, seed: int) -> list:
    """A seeded shuffle, then the first `limit`: the same questions for every method and every re-run."""
    if limit is not None and limit < 1:  # order[:0] is every question, order[:-1] all but one
        raise HyporagError(f"limit must be 1 or more, got {limit}; omit it to run every question")
    order = list(examples)
    random.Random(seed).shuffle(order)
    return order[:limit] if limit else order
