"""hyporag: decision-useful retrieval for multiple-choice questions, as DSPy programs.

Subpackages: `hyporag.signatures`, `hyporag.programs`, `hyporag.retrieval`, `hyporag.eval`, `hyporag.optimizers`,
`hyporag.jobs` (every command as a call: evaluate, fit, tune, compile, reproduce) and `hyporag.cli` (the shell).
The names below are the public API; they import lazily so `import hyporag` stays cheap (no torch, no FAISS).
"""

from __future__ import annotations

import importlib
import os
from typing import Any

# LiteLLM fetches its model price map from the web when first imported unless told to use its bundled copy: set
# before any hyporag path can import it (offline that fetch costs ~10 s; online it is an unasked-for request)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "true")

__version__ = "0.1.0"

_EXPORTS = {
    "HCQR": "hyporag.programs",
    "CHR": "hyporag.programs",
    "CoT": "hyporag.programs",
    "SimpleRAG": "hyporag.programs",
    "RerankRAG": "hyporag.programs",
    "Rewriting": "hyporag.programs",
    "HyDE": "hyporag.programs",
    "Query2DocRAG": "hyporag.programs",
    "make_program": "hyporag.programs",
    "register_method": "hyporag.programs",
    "MCQProgram": "hyporag.programs",
    "LMRoles": "hyporag.lm",
    "build_lm": "hyporag.lm",
    "LambdaSchedule": "hyporag.retrieval",
    "build_index": "hyporag.retrieval",
    "open_index": "hyporag.retrieval",
    "default_index_dir": "hyporag.retrieval",
    "load_corpus": "hyporag.retrieval",
    "load_benchmark": "hyporag.questions.datasets",
    "load_records": "hyporag.questions.records",
    "run_evaluation": "hyporag.jobs.evaluate",
    "load_artifact": "hyporag.optimizers.artifact",
    "save_artifact": "hyporag.optimizers.artifact",
    "RunConfig": "hyporag.jobs.run_config",
    "MethodChoice": "hyporag.jobs.run_config",
    "DataSettings": "hyporag.jobs.run_groups",
    "IndexSettings": "hyporag.jobs.run_groups",
    "LMSettings": "hyporag.jobs.run_groups",
    "RunControl": "hyporag.jobs.run_groups",
    "TrackingSettings": "hyporag.jobs.run_groups",
    "EvalSettings": "hyporag.jobs.settings",
    "FitSettings": "hyporag.jobs.settings",
    "TuneSettings": "hyporag.jobs.settings",
    "CompileSettings": "hyporag.jobs.settings",
    "ReproduceSettings": "hyporag.jobs.settings",
    "EmbedSettings": "hyporag.jobs.settings",
    "AskSettings": "hyporag.jobs.settings",
    "IndexBuildSettings": "hyporag.jobs.settings",
    "ask": "hyporag.jobs.ask",
    "index_corpus": "hyporag.jobs.index",
    "evaluate": "hyporag.jobs.evaluate",
    "compare": "hyporag.jobs.compare",
    "fit": "hyporag.jobs.fit",
    "tune": "hyporag.jobs.tune",
    "compile": "hyporag.jobs.compile",
    "reproduce": "hyporag.jobs.reproduce",
    "embed": "hyporag.jobs.embed",
    "load_program": "hyporag.jobs.program",
    "OptionContrast": "hyporag.programs.option_contrast",
    "Protocol": "hyporag.programs.protocol",
    "merge_runs": "hyporag.eval.shards",
    "merge_tables": "hyporag.jobs.reproduce",
    "write_view": "hyporag.eval.viewer",
    "serve_view": "hyporag.eval.viewer",
    "build_roles": "hyporag.jobs.builders",
    "build_retriever": "hyporag.jobs.builders",
    "build_program": "hyporag.jobs.builders",
    "select_examples": "hyporag.jobs.builders",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'hyporag' has no attribute {name!r}")
