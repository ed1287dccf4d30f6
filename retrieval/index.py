"""Build an index directory once and open it with checks: a manifest ties it to its corpus and its files.

Layout: `manifest.json`, `passages.sqlite`, `bm25/`, `dense/{shards/,vectors.npy,faiss-<kind>.index}`.
Each part is written under a temporary name and renamed when complete, and the manifest is rewritten atomically
after each part, so a killed build resumes from the parts that finished (and from the embedding shards).
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import sqlite3
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from hyporag.foundation.atomic import write_json_atomic
from hyporag.foundation.errors import ConfigError, HyporagError, IndexMismatchError
from hyporag.foundation.manifests import read_json_object
from hyporag.foundation.paths import cache_dir
from hyporag.retrieval.bm25 import SEARCHES
from hyporag.retrieval.bm25_engines import (
    bm25_engine_of,
    bm25_part_wanted,
    check_search,
    engine_class,
    part_record,
    resolve_engine,
)
from hyporag.retrieval.bm25_forward import DIRNAME as FORWARD_DIR
from hyporag.retrieval.bm25_forward import build_forward
from hyporag.retrieval.corpus import Corpus, load_corpus
from hyporag.retrieval.dense import DenseIndex
from hyporag.retrieval.dense_part import build_dense, open_dense
from hyporag.retrieval.embedder import DEFAULT_EMBEDDER
from hyporag.retrieval.encoders import encoder_spec
from hyporag.retrieval.estimate import available_ram, estimate, refuse_if_too_big
from hyporag.retrieval.index_files import record_files, verify_files
from hyporag.retrieval.passage_split import MAX_PASSAGE_CHARS, MIN_PASSAGE_CHARS, SplitReport, split_long_passages
from hyporag.retrieval.retriever import Retriever
from hyporag.retrieval.store import PassageStore
from hyporag.retrieval.vectors_in import check_made_for

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
BM25_DIR = "bm25"  # the BM25 part, whichever engine built it
BM25_BATCH = 50_000  # passages tokenized at a time: BM25's memory is one batch, not the corpus


def default_index_dir(corpus: Corpus | str, data_dir: str | Path | None = None) -> Path:
    """`indexes/<name>-<hash of the corpus source>`: two corpora whose files share a stem (`notes.jsonl` in two
    folders) get two directories, so building one never replaces the other's index."""
    if isinstance(corpus, str):
        corpus = load_corpus(corpus, data_dir)
    key = hashlib.sha256(corpus.source.encode("utf-8")).hexdigest()[:10]
    directory = cache_dir("indexes") / f"{corpus.name}-{key}"
    _adopt_legacy(cache_dir("indexes") / corpus.name, directory, corpus)
    return directory


def _adopt_legacy(legacy: Path, directory: Path, corpus: Corpus) -> None:
    """Indexes of hyporag <= 0.1 lived at `indexes/<name>`: move one of this very corpus (same fingerprint) to its
    new place instead of re-embedding it (the dense part takes an hour on 2 cores)."""
    if directory.exists() or not (legacy / MANIFEST).is_file():
        return
    with contextlib.suppress(OSError, ValueError, IndexMismatchError):
        if read_manifest(legacy).get("corpus_fingerprint") == corpus.fingerprint():
            legacy.rename(directory)


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"


def read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    manifest = read_json_object(path, IndexMismatchError, "no index manifest; build it with `hyporag index build`",
                                "; rebuild the index")
    if manifest.get("format_version") != FORMAT_VERSION:
        found = manifest.get("format_version")
        raise IndexMismatchError(f"{path}: index format {found!r}, this hyporag reads {FORMAT_VERSION}; rebuild it")
    return manifest


def build_index(corpus: Corpus, directory: Path | None = None, retriever: str = "both",
                embedder_name: str = DEFAULT_EMBEDDER, faiss_kind: str = "flat", max_seq_length: int | None = None,
                progress: bool = True, log=None, force: bool = False, vectors: Path | None = None,
                max_passage_chars: int = MAX_PASSAGE_CHARS, bm25_engine: str = "auto",
                bm25_search: str = "exact") -> Path:
    """Build (or finish building) the index of `corpus`; returns its directory. `vectors`: a directory of
    precomputed passage vectors to use instead of embedding (made by the encoder `embedder_name` names).
    `bm25_engine`: bm25s, tantivy, or auto (by corpus size; retrieval.bm25_engines). `bm25_search` two-stage also
    writes the forward index the two-stage search rescores from (bm25s engine only; as large as the BM25 part).

    An index of another corpus in `directory` (another source and other contents) is refused unless `force`:
    replacing it would destroy something the user built. The same source with new contents is rebuilt."""
    log = log or _to_stderr  # estimates and timings are diagnostics: never mixed into a caller's stdout
    if bm25_search not in SEARCHES:
        raise ConfigError(f"unknown BM25 search {bm25_search!r}: use one of {', '.join(SEARCHES)}")
    if isinstance(max_passage_chars, bool) or not isinstance(max_passage_chars, int) \
            or max_passage_chars < MIN_PASSAGE_CHARS:
        raise ConfigError(f"max_passage_chars must be a whole number of at least {MIN_PASSAGE_CHARS} characters, got "
                          f"{max_passage_chars!r}")
    if bm25_search == "two-stage" and bm25_engine == "tantivy":
        raise ConfigError("--bm25-search two-stage rescores from bm25s's arrays; build with --bm25-engine bm25s")
    directory = Path(directory) if directory else default_index_dir(corpus)
    created = not directory.exists()
    directory.mkdir(parents=True, exist_ok=True)
    try:
        return _build(corpus, directory, retriever, embedder_name, faiss_kind, max_seq_length, progress, log, force,
                      vectors, max_passage_chars, bm25_engine, bm25_search)
    except BaseException as exc:  # interrupted: what was built stays and resumes; refused vectors: nothing stays
        if created and (isinstance(exc, HyporagError) and vectors is not None or not any(directory.iterdir())):
            shutil.rmtree(directory, ignore_errors=True)
        raise


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _clear(directory: Path) -> None:
    for child in directory.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()


def _build(corpus: Corpus, directory: Path, retriever: str, embedder_name: str, faiss_kind: str,
           max_seq_length: int | None, progress: bool, log, force: bool, vectors: Path | None,
           max_passage_chars: int, bm25_engine: str, bm25_search: str) -> Path:
    fingerprint = corpus.fingerprint()
    manifest: dict[str, Any] = {}
    if (directory / MANIFEST).is_file():
        manifest = read_manifest(directory)
        same_contents = manifest.get("corpus_fingerprint") == fingerprint
        if not same_contents and manifest.get("corpus_source") != corpus.source and not force:
            raise IndexMismatchError(
                f"{directory}: holds the index of another corpus ({manifest.get('corpus_source')}, "
                f"{manifest.get('passage_count')} passages); pass --force to replace it, or choose another "
                "--index-dir")
        if not same_contents:
            log(f"{directory}: corpus differs from the last build; rebuilding from scratch")
            had = (manifest.get("parts", {}).get("bm25") or {}).get("engine")
            if bm25_engine == "auto" and had:  # the rebuild keeps the engine the user chose for this index
                bm25_engine = had
            _clear(directory)
            manifest = {}
    manifest.update({"format_version": FORMAT_VERSION, "corpus": corpus.name, "corpus_source": corpus.source,
                     "corpus_spec": corpus.spec,
                     "corpus_fingerprint": fingerprint})
    manifest.setdefault("parts", {})
    manifest["libraries"] = {p: _version(p) for p in ("hyporag", "bm25s", "faiss-cpu", "sentence-transformers")}

    spec = encoder_spec(embedder_name, max_seq_length)
    plan = estimate(corpus.count(), sum(f.stat().st_size for f in corpus.files), retriever, spec.name, faiss_kind,
                    vectors is not None, spec.hashing_dimension, bm25_forward=bm25_search == "two-stage")
    log(plan.describe())
    refuse_if_too_big(plan, available_ram())
    if vectors is not None and retriever in ("dense", "both"):  # before any slow part: a mismatch costs nothing
        check_made_for(Path(vectors), fingerprint, spec.to_dict(), max_passage_chars)

    store_path = directory / PassageStore.FILENAME
    if "store" not in manifest["parts"] or not store_path.is_file():
        started = time.perf_counter()
        partial = directory / (PassageStore.FILENAME + ".partial")
        split = SplitReport(max_passage_chars)
        try:
            count = PassageStore.build(partial, split_long_passages(corpus, split))
        except BaseException:  # an empty or malformed corpus leaves nothing behind
            partial.unlink(missing_ok=True)
            raise
        partial.replace(store_path)
        manifest["passage_count"] = count
        manifest["empty_passages_skipped"] = corpus.empty_skipped
        manifest.update(split.as_manifest())
        if split.count:
            log(split.describe())
        manifest["parts"]["store"] = {"seconds": round(time.perf_counter() - started, 2)}
        _save(directory, manifest)
        log(f"passage store: {count} passages ({corpus.empty_skipped} empty skipped)")
    store = PassageStore(store_path)

    def dense_part() -> None:
        build_dense(directory, manifest, store, spec, faiss_kind, progress, log, _save, vectors)

    if vectors is not None and retriever in ("dense", "both"):
        dense_part()  # precomputed vectors are checked before any slow part, so a mismatch costs nothing
    if retriever in ("bm25", "both") and bm25_part_wanted(directory, manifest, bm25_engine, force):
        engine = resolve_engine(bm25_engine, manifest["passage_count"])
        started = time.perf_counter()
        tmp = directory / "bm25.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        engine_class(engine).build_in_chunks(store.texts(BM25_BATCH), tmp, show_progress=progress)
        shutil.rmtree(directory / BM25_DIR, ignore_errors=True)
        manifest["parts"].pop("bm25_forward", None)  # the forward index of the BM25 part replaced
        shutil.rmtree(directory / FORWARD_DIR, ignore_errors=True)
        tmp.rename(directory / BM25_DIR)
        manifest["parts"]["bm25"] = {**part_record(engine), "seconds": round(time.perf_counter() - started, 2)}
        _save(directory, manifest)
        log(f"bm25 ({engine}): built in {manifest['parts']['bm25']['seconds']} s")
    if bm25_search == "two-stage" and "bm25" in manifest["parts"] and "bm25_forward" not in manifest["parts"]:
        if manifest["parts"]["bm25"].get("engine", "bm25s") != "bm25s":
            raise ConfigError(f"{directory}: --bm25-search two-stage rescores from bm25s's arrays, and this index's "
                              "BM25 part was built by tantivy; rebuild it with --bm25-engine bm25s --force")
        started = time.perf_counter()
        build_forward(directory / BM25_DIR, manifest["passage_count"])
        forward_bytes = sum(f.stat().st_size for f in (directory / FORWARD_DIR).iterdir())
        manifest["parts"]["bm25_forward"] = {"seconds": round(time.perf_counter() - started, 2),
                                             "bytes": forward_bytes}
        _save(directory, manifest)
        log(f"bm25 forward index (two-stage search): {forward_bytes / 2**20:.0f} MB in "
            f"{manifest['parts']['bm25_forward']['seconds']} s")
    if vectors is None and retriever in ("dense", "both"):
        dense_part()
    store.close()
    manifest["built_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    _save(directory, manifest)
    return directory


def _save(directory: Path, manifest: dict[str, Any]) -> None:
    parts = [PassageStore.FILENAME]
    if "bm25" in manifest["parts"]:
        parts.append(BM25_DIR)
    if "bm25_forward" in manifest["parts"]:
        parts.append(FORWARD_DIR)
    if "dense" in manifest["parts"]:
        parts.append(f"{DenseIndex.DIRNAME}/vectors.npy")
        parts += [f"{DenseIndex.DIRNAME}/faiss-{k}.index" for k in manifest["parts"]["dense"]["faiss"]]
        parts += [f"{DenseIndex.DIRNAME}/faiss-{k}.ivfdata" for k in manifest["parts"]["dense"]["faiss"]
                  if (directory / DenseIndex.DIRNAME / f"faiss-{k}.ivfdata").is_file()]  # a merged shard build's lists
    manifest["files"] = record_files(directory, parts)
    write_json_atomic(directory / MANIFEST, manifest)


def is_complete(manifest: dict[str, Any]) -> bool:
    """An index a retriever can search: its store and at least one of BM25 and dense finished."""
    parts = manifest.get("parts") or {}
    return "store" in parts and ("bm25" in parts or "dense" in parts)


def open_index(directory: Path, corpus: Corpus | None = None, mode: str | None = None, faiss_kind: str = "flat",
               embedder=None, checksums: bool = True, asked_encoder: str | None = None, nprobe: int | None = None,
               asked_bm25_engine: str | None = None, bm25_search: str | None = None,
               **retriever_kwargs: Any) -> Retriever:
    """Load a built index, refusing a manifest/corpus/file mismatch (or a query encoder other than the one that
    made its vectors, `asked_encoder`, or a BM25 engine other than `asked_bm25_engine`) with a one-line error."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    if corpus is not None and manifest.get("corpus_fingerprint") != corpus.fingerprint():
        # the same corpus edited since: rebuilt in place; another corpus: its own (default) directory
        where = f" --index-dir {directory}" if manifest.get("corpus_source") == corpus.source else ""
        raise IndexMismatchError(
            f"{directory}: index was built from corpus {manifest.get('corpus')!r} with fingerprint "
            f"{str(manifest.get('corpus_fingerprint'))[:12]}..., which does not match {corpus.spec} "
            f"({corpus.fingerprint()[:12]}...); build its index with `hyporag index build --corpus {corpus.spec}"
            f"{where}`")
    if not is_complete(manifest):
        raise IndexMismatchError(
            f"{directory}: its build stopped before a retriever part finished (parts: "
            f"{', '.join(manifest.get('parts') or {}) or 'none'}); complete it with `hyporag index build --corpus "
            f"{manifest.get('corpus_spec') or '<corpus>'} --index-dir {directory}` (finished parts are reused)")
    engine = bm25_engine_of(directory, manifest, asked_bm25_engine)
    search = check_search(directory, manifest, bm25_search)
    verify_files(directory, manifest, checksums=checksums)
    try:  # files that match their manifest can still be ones numpy, bm25s or FAISS refuse (a hostile artifact's)
        store = PassageStore(directory / PassageStore.FILENAME)
        bm25 = None
        if "bm25" in manifest["parts"]:
            bm25 = engine_class(engine).load(directory / BM25_DIR, **({"search": search} if search != "exact" else {}))
        dense = None
        dense_part = manifest["parts"].get("dense")
        if dense_part and mode != "bm25":
            dense = open_dense(directory, dense_part, faiss_kind, embedder, asked_encoder, nprobe)
    except HyporagError:
        raise
    except (ValueError, OSError, RuntimeError, KeyError, sqlite3.Error) as exc:
        raise IndexMismatchError(f"{directory}: an index file cannot be opened ({type(exc).__name__}: "
                                 f"{str(exc).splitlines()[0][:160] if str(exc) else ''}); rebuild it with `hyporag "
                                 f"index build --corpus {manifest.get('corpus_spec') or '<corpus>'} "
                                 f"--index-dir {directory} --force`") from None
    retriever = Retriever(store, bm25, dense, mode=mode, fingerprint=manifest["corpus_fingerprint"], **retriever_kwargs)
    retriever.manifest = manifest
    retriever.directory = directory
    return retriever
