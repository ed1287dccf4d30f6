"""Frozen artifacts: DSPy program state (JSON, never pickle) plus a manifest of everything `save()` does not keep.

DSPy's `save()` stores instructions and demos only; λ and its schedule, per-query k, the budget and merge policy,
the retriever and its index fingerprint, LMs per role, versions, optimizer settings, splits and the validation
metrics live in `manifest.json`. Loading checks the manifest first (versions, program checksum, index
fingerprint), builds the program from it, then applies the JSON state: either all of it loads or nothing does.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from importlib import metadata
from pathlib import Path
from typing import Any

from hyporag.foundation.errors import HyporagError, IndexMismatchError
from hyporag.foundation.manifests import read_json_object
from hyporag.programs.config import ProgramConfig
from hyporag.programs.registry import make_program, method_config
from hyporag.retrieval.bm25_engines import engine_of_retriever, search_of_retriever

FORMAT = "hyporag-artifact"
FORMAT_VERSION = 2  # 2: the manifest carries its own checksum and the corpus it retrieves from
REQUIRED = {"format": str, "format_version": int, "method": str, "program_settings": dict, "retrieval": dict,
            "lms": dict, "versions": dict, "program_sha256": str, "manifest_sha256": str}


class ArtifactError(HyporagError):
    """A frozen artifact is missing, edited into an invalid state, or does not fit this program or index."""


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def manifest_checksum(manifest: dict[str, Any]) -> str:
    """sha256 of the manifest's canonical JSON without its own checksum: any edit of any field changes it."""
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def retrieval_record(retriever) -> dict[str, Any]:
    """Where the program retrieves from: enough to reopen the same index without repeating --corpus."""
    index = getattr(retriever, "manifest", None) or {}
    return {
        "corpus": index.get("corpus"),
        "corpus_spec": index.get("corpus_spec") or index.get("corpus_source"),
        "corpus_source": index.get("corpus_source"),
        "index_fingerprint": getattr(retriever, "fingerprint", None),
        "index_dir": str(getattr(retriever, "directory", "") or "") or None,
        "mode": getattr(retriever, "mode", None),
        "bm25_engine": engine_of_retriever(retriever),
        "bm25_search": search_of_retriever(retriever),
    }


def save_artifact(directory: str | Path, program, retriever, lms: dict[str, str], extra: dict[str, Any]) -> Path:
    """Write program.json + manifest.json into a temporary directory, then swap it into place."""
    directory = Path(directory)
    partial = directory.with_name(f".{directory.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        program.save(str(partial / "program.json"))
        digest = hashlib.sha256((partial / "program.json").read_bytes()).hexdigest()
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "method": program.method,
            "program_settings": program.settings(),
            "retrieval": retrieval_record(retriever),
            "lms": lms,
            # the protocol's every rule, and the engine it ran on (the embedded engine's output cap is part of its
            # identity): a reload builds the LMs as the freezing process did
            "protocol": program.protocol_record(),
            # the adapter writes every prompt: a reload must format them as the compile did
            **({"adapters": program.roles.adapters(), "lm_identities": program.roles.identities()}
               if getattr(program, "roles", None) is not None else {}),
            "versions": {"hyporag": _version("hyporag"), "dspy": _version("dspy")},
            "program_sha256": digest,
            **extra,
        }
        manifest["manifest_sha256"] = manifest_checksum(manifest)
        (partial / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
        if directory.exists():
            old = directory.with_name(f".{directory.name}.old-{os.getpid()}")
            directory.rename(old)
            partial.rename(directory)
            shutil.rmtree(old, ignore_errors=True)
        else:
            partial.rename(directory)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return directory


def read_artifact_manifest(directory: str | Path) -> dict[str, Any]:
    """The manifest, checked: format first (an older artifact says so), then fields, then its checksum."""
    directory = Path(directory)
    path = directory / "manifest.json"
    manifest = read_json_object(path, ArtifactError, "artifact manifest missing (not a `hyporag compile` output?)")
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
        raise ArtifactError(f"{path}: format {manifest.get('format')!r} v{manifest.get('format_version')}, "
                            f"this hyporag reads {FORMAT} v{FORMAT_VERSION}; recompile it")
    for key, kind in REQUIRED.items():
        if not isinstance(manifest.get(key), kind):
            raise ArtifactError(f"{path}: field {key!r} is missing or not a {kind.__name__}")
    if manifest_checksum(manifest) != manifest["manifest_sha256"]:
        raise ArtifactError(f"{path}: manifest differs from its checksum (edited or corrupted); an artifact is "
                            "frozen: recompile it, or change settings with command-line flags instead")
    saved, running = manifest["versions"].get("dspy", "?"), _version("dspy")
    if _minor(saved) != _minor(running):
        raise ArtifactError(f"{path}: compiled with dspy {saved}, running {running}; recompile or install dspy "
                            f"{_minor(saved)}.*")
    return manifest


def refuse_predictor_lms(state_path: Path) -> None:
    """DSPy's predictor state may carry its own `lm` (a model, even an api_key), which `load` would build and call
    instead of the LMs the user named, with the user's key from the environment. A frozen program's models are the
    ones the run names (`--lm`, the role flags), so an artifact that carries one is refused."""
    state = read_json_object(state_path, ArtifactError, "program state is missing", what="program state")
    for name, predictor in state.items():
        lm = predictor.get("lm") if isinstance(predictor, dict) else None
        if lm:
            model = lm.get("model") if isinstance(lm, dict) else lm
            raise ArtifactError(f"{state_path}: predictor {name!r} carries its own LM ({str(model)[:60]!r}); a "
                                "frozen program runs on the LMs you name (--lm), so this artifact is refused; "
                                "recompile it, or remove that \"lm\" entry and re-freeze")


def frozen_config(directory: str | Path, manifest: dict | None = None) -> ProgramConfig:
    """The typed config an artifact was frozen with, from its manifest: what a run records and compares, rather
    than reading settings back out of the loaded program."""
    directory = Path(directory)
    manifest = manifest or read_artifact_manifest(directory)
    try:
        return method_config(manifest["method"], manifest["program_settings"],
                             source=f"{directory / 'manifest.json'}: program_settings", strict=True)
    except (TypeError, ValueError) as exc:
        raise ArtifactError(f"{directory / 'manifest.json'}: program_settings do not fit {manifest['method']!r} "
                            f"({exc})") from None


def load_artifact(directory: str | Path, retriever, roles):
    """Rebuild the frozen program on this retriever and these LMs; refuses any mismatch with one line."""

    directory = Path(directory)
    manifest = read_artifact_manifest(directory)
    state_path = directory / "program.json"
    if not state_path.is_file():
        raise ArtifactError(f"{state_path}: program state missing")
    if hashlib.sha256(state_path.read_bytes()).hexdigest() != manifest["program_sha256"]:
        raise ArtifactError(f"{state_path}: checksum differs from the manifest (edited or corrupted)")
    refuse_predictor_lms(state_path)
    wanted = manifest["retrieval"].get("index_fingerprint")
    if wanted and retriever is not None and retriever.fingerprint != wanted:
        raise IndexMismatchError(f"{directory}: compiled against an index of corpus fingerprint {wanted[:12]}..., "
                                 f"but the index given has {retriever.fingerprint[:12]}...; use the same corpus")
    frozen_engine, engine = manifest["retrieval"].get("bm25_engine"), engine_of_retriever(retriever)
    if frozen_engine and engine and frozen_engine != engine:
        raise IndexMismatchError(f"{directory}: compiled on a {frozen_engine} BM25 index, but the index given was "
                                 f"built by {engine}; its rankings differ, so give an index built with --bm25-engine "
                                 f"{frozen_engine}")
    frozen_search, search = manifest["retrieval"].get("bm25_search") or "exact", search_of_retriever(retriever)
    if engine and search and frozen_search != search:
        raise IndexMismatchError(f"{directory}: compiled with the {frozen_search} BM25 search, but this run searches "
                                 f"{search}; its rankings differ, so pass --bm25-search {frozen_search}")
    config = frozen_config(directory, manifest)
    try:
        program = make_program(manifest["method"], retriever=retriever, roles=roles, config=config)
    except (TypeError, ValueError) as exc:
        raise ArtifactError(f"{directory / 'manifest.json'}: program_settings do not fit {manifest['method']!r} "
                            f"({exc})") from None
    try:
        program.load(str(state_path))
    except Exception as exc:  # DSPy's load_state is transactional: nothing was applied
        raise ArtifactError(f"{state_path}: state does not fit program {manifest['method']!r} "
                            f"({type(exc).__name__}: {str(exc)[:160]})") from None
    program.artifact_manifest = manifest
    return program
