"""What every command's parser shares (data, LM, retrieval and run flags) and how flags, the project file and
its per-command table become the typed settings the library takes."""

from __future__ import annotations

import argparse
from pathlib import Path

from hyporag.foundation.errors import ConfigError
from hyporag.jobs.run_config import (
    PROJECT_FILE,
    RUN_FIELDS,
    RunConfig,
    build_run_config,
    program_fields,
    read_project_file,
)
from hyporag.jobs.settings import JOBS, JobSettings
from hyporag.programs.registry import CONFIGS
from hyporag.retrieval.bm25 import SEARCHES as BM25_SEARCHES
from hyporag.retrieval.bm25_engines import CHOICES as BM25_CHOICES
from hyporag.retrieval.dense import FAISS_KINDS
from hyporag.retrieval.retriever import MODES

ROUTING = {"command", "data_command", "index_command", "config", "debug"}


def add_data_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", help="local data root (default: $HYPORAG_DATA_DIR, then ../shared/data)")


def add_lm_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("language models (DSPy/LiteLLM strings or local:<alias|file.gguf>)")
    group.add_argument("--lm", help="every role (default local:qwen2.5-coder-1.5b)")
    group.add_argument("--hypothesis-lm", help="hypotheses, rewrites, pseudo-documents, reranking")
    group.add_argument("--answer-lm", help="the answer step")
    group.add_argument("--judge-lm", help="the DUR judge")
    group.add_argument("--api-base", action="append", dest="api_bases", metavar="URL",
                       help="OpenAI-compatible server URL (vLLM, Ollama, llama.cpp, ...); repeat it for several "
                       "servers of one model: calls go to the least busy, a dead one is skipped as the run goes on")
    for role in ("hypothesis", "answer", "judge"):
        group.add_argument(f"--{role}-api-base", action="append", dest=f"{role}_api_bases", metavar="URL",
                           help=f"the {role} role's own server(s) (repeatable; default --api-base)")
    group.add_argument("--api-key", help="API key (default: the provider's environment variable)")
    group.add_argument("--max-tokens", type=int, help="reply tokens per call, reserved in the context (default 512)")
    group.add_argument("--context-tokens", type=int, help="the answer LM's context window (default: n_ctx for local "
                       "models, the server's or DSPy's model metadata for remote ones; unknown = not checked)")
    group.add_argument("--timeout", type=float, help="seconds to wait for each remote LM reply (default 120; 600 for "
                       "a server on 127.0.0.1, where a CPU model's reply can take minutes)")
    group.add_argument("--retries", type=int, help="retries with backoff for a remote LM (DSPy's; default 3)")
    group.add_argument("--no-cache", action="store_const", const=True, help="bypass DSPy's disk cache of LM calls")
    group.add_argument("--speculative", metavar="MODE", help="speculative decoding in the embedded engine: none "
                       "(default), ngram, ngram-mod, draft[:MODEL] (default draft qwen2.5-coder-0.5b); a mode "
                       "whose replies were measured to differ from plain decoding is refused (all three today: "
                       "docs/results/speed.md)")
    group.add_argument("--adapter", choices=("auto", "lean", "json", "chat"),
                       help="DSPy adapter: auto (default) = lean for local models under --protocol fast, JSON for "
                       "local ones under paper and for --api-base servers, else Chat")


def add_program_args(parser: argparse.ArgumentParser) -> None:
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
    group.add_argument("--bm25-engine", choices=BM25_CHOICES, help="check that the index's BM25 part was built by "
                       "this engine (bm25s or tantivy; another is refused)")
    group.add_argument("--bm25-search", choices=BM25_SEARCHES, help="exact (default: every passage scored) or "
                       "two-stage (rare terms over every passage, the best 1,000 rescored exactly; needs an index "
                       "built with --bm25-search two-stage; docs/results/scale.md has its overlap and speed)")
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


def add_model_and_program_args(parser: argparse.ArgumentParser) -> None:
    add_data_args(parser)
    add_lm_args(parser)
    add_program_args(parser)


def add_run_args(parser: argparse.ArgumentParser, dataset_help: str | None) -> None:
    """The run flags; `dataset_help` None: the command names its datasets itself (reproduce)."""
    if dataset_help:
        parser.add_argument("--dataset", help=dataset_help)
    parser.add_argument("--limit", type=int, help="first N questions after a seeded shuffle")
    parser.add_argument("--seed", type=int, help="shuffle and split seed (default 0)")
    parser.add_argument("--threads", type=int, help="questions answered at once (default 1; against servers, at least "
                        "one per server; the embedded model on 2 cores gains nothing from more)")
    parser.add_argument("--track", metavar="URI", help="log this job as an MLflow run at URI (http://host:5000, "
                        "sqlite:///mlflow.db, a folder); needs pip install 'hyporag[mlflow]'")
    parser.add_argument("--skip-bad-rows", action="store_const", const=True,
                        help="skip (and count) bad rows and over-long questions instead of stopping")



def add_optimizer_args(parser: argparse.ArgumentParser, what: str) -> None:
    """The flags `compile` and `fit` share (the teleprompter), and `tune` and `fit` (the study)."""
    if what == "prompts":
        parser.add_argument("--optimizer", choices=("bootstrap", "bootstrap-rs", "mipro", "gepa"),
                            help="DSPy teleprompter (default bootstrap)")
        parser.add_argument("--auto", choices=("light", "medium", "heavy"), help="MIPROv2/GEPA preset (default light)")
        parser.add_argument("--max-demos", type=int, help="few-shot demos per predictor (default 2)")
        parser.add_argument("--max-metric-calls", type=int, help="GEPA: stop after this many program runs instead "
                            "of an --auto preset (each run is a full program call)")
        parser.add_argument("--reflection-lm", help="LM that writes new instructions (GEPA's reflection, "
                            "MIPROv2's prompt model); default the hypothesis LM")
    else:
        parser.add_argument("--trials", type=int, help="Optuna trials (default: tune 20, fit 6)")
        parser.add_argument("--storage", help="journal file path or RDB URL (postgresql://...); default a journal "
                            "file under runs/studies/ (fit: inside --out)")
        parser.add_argument("--modes", help="retriever modes to search, e.g. bm25,dense,hybrid")
        parser.add_argument("--objective", choices=("accuracy", "log-p-gold", "margin"),
                            help="what the study maximises: accuracy (default; the reader's mean log p of the "
                            "correct option breaks ties), log-p-gold, or margin (docs/results/margin.md)")


def add_split_args(parser: argparse.ArgumentParser) -> None:
    """The questions an optimizer sees and what it scores (compile, tune)."""
    add_model_and_program_args(parser)
    add_run_args(parser, "dev set to split (default medqa-dev); never a test split")
    parser.add_argument("--method", help="method to optimize (implied by --program)")
    parser.add_argument("--metric", choices=("accuracy", "dur", "combined"), help="default accuracy")
    parser.add_argument("--allow-test", action="store_const", const=True,
                        help="permit tuning on a test split (don't)")
    parser.add_argument("--program", help="start from a frozen artifact directory")
    parser.add_argument("--out", help="artifact directory to write")
    parser.add_argument("--val-fraction", type=float, help="validation share of the split (default 0.3)")
    parser.add_argument("--trainset", help="explicit train set (name or file) instead of splitting --dataset")
    parser.add_argument("--valset", help="explicit validation set (name or file)")


def _job_keys() -> dict[str, set[str]]:
    """Keys only a job has (not shared run or program settings), by job."""
    shared = RUN_FIELDS | program_fields()
    return {job: cls.field_names() - shared for job, cls in JOBS.items()}


def load_settings(args: argparse.Namespace, job: type[JobSettings] | None = None,
                  flags_for_job: dict | None = None) -> tuple[RunConfig, JobSettings | None]:
    """(the shared RunConfig, the job's settings): defaults < the project file's top level < its `[command]`
    table < the flags given. A key in the wrong place or unknown anywhere is refused naming file and key."""
    project, path = read_project_file(Path(args.config) if args.config else None)
    origin = path or PROJECT_FILE
    command = args.command
    shared = {k: v for k, v in project.items() if not isinstance(v, dict)}
    tables = {k: v for k, v in project.items() if isinstance(v, dict)}
    for name in tables:
        if name not in JOBS:
            raise ConfigError(f"{origin}: unknown table [{name}] (one table per command: {', '.join(JOBS)})")
    only_jobs = _job_keys()
    for key in shared:
        owners = [j for j, keys in only_jobs.items() if key.replace("-", "_") in keys]
        if owners:
            raise ConfigError(f"{origin}: {key} is a setting of {' and '.join(owners)}; put it under "
                              f"[{owners[0]}]")
    table = tables.get(command, {})
    job_keys = (job.field_names() - RUN_FIELDS) | job.OWN if job else set()
    job_part = {k: v for k, v in table.items() if k.replace("-", "_") in job_keys}
    run_part = {k: v for k, v in table.items() if k.replace("-", "_") not in job_keys}
    flags = {k: v for k, v in vars(args).items() if k not in ROUTING and k not in job_keys}
    config = build_run_config(flags, shared, origin, table=run_part, table_origin=f"{origin} [{command}]")
    if job is None:
        return config, None
    settings = job.from_dict(job_part, source=f"{origin} [{command}]")
    given = {k: getattr(args, k) for k in job_keys if getattr(args, k, None) is not None}
    given.update({k: v for k, v in (flags_for_job or {}).items() if v is not None})
    settings = job.from_dict(given, source="command line", base=settings) if given else settings
    if "out" in job.field_names() and getattr(settings, "out", None) is None and config.control.out:
        settings = settings.replace(out=config.control.out)  # shared `out` (top level or flag) serves the job too
    return config, settings
