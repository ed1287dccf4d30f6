"""The dense part of an index: vectors from an encoder spec, FAISS kinds built from them, and the encoder a load
rebuilds from the manifest (queries always go through the query side that matches the passage vectors)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from hyporag.foundation.errors import IndexMismatchError
from hyporag.retrieval.dense import DenseIndex, build_faiss, embed_in_shards
from hyporag.retrieval.encoders import EncoderSpec, check_query_encoder, encoder_spec, make_encoder
from hyporag.retrieval.store import PassageStore
from hyporag.retrieval.vectors_in import ingest_vectors


def recorded_spec(part: dict[str, Any]) -> EncoderSpec:
    """The spec an index's vectors were made with (an index from before specs records the embedder's name)."""
    if "encoder" in part:
        return EncoderSpec.from_dict(part["encoder"], "index manifest")
    return encoder_spec(part["embedder"], part.get("max_seq_length"))


def build_dense(directory: Path, manifest: dict, store: PassageStore, spec: EncoderSpec, faiss_kind: str,
                progress: bool, log, save, vectors_dir: Path | None = None) -> None:
    """Embed the store once (resumable shards), or take precomputed vectors from `vectors_dir`, then build the
    FAISS kind asked for from the saved vectors."""
    dense_dir = directory / DenseIndex.DIRNAME
    part = manifest["parts"].get("dense")
    if part and recorded_spec(part) != spec:
        raise IndexMismatchError(f"{directory}: its dense part was built with encoder {recorded_spec(part).name!r}; "
                                 f"use another --index-dir for {spec.name!r}")
    if part and vectors_dir is not None and part.get("vectors_from") != str(Path(vectors_dir).resolve()):
        raise IndexMismatchError(f"{directory}: its dense part came from {part.get('vectors_from') or 'embedding'}; "
                                 "use another --index-dir for these vectors")
    if not part:
        started = time.perf_counter()
        if vectors_dir is not None:
            count, dimension = ingest_vectors(Path(vectors_dir), store, dense_dir / "vectors.npy", log)
        else:
            vectors = embed_in_shards(store.pairs(2048), make_encoder(spec), dense_dir / "shards", store.count,
                                      progress=progress)
            write_vectors(dense_dir, vectors)
            count, dimension = vectors.shape
        manifest["parts"]["dense"] = {"embedder": spec.name, "encoder": spec.to_dict(), "dimension": int(dimension),
                                      "normalized": spec.normalize, "faiss": [],
                                      "vectors_from": str(Path(vectors_dir).resolve()) if vectors_dir else None,
                                      "seconds": round(time.perf_counter() - started, 2)}
        save(directory, manifest)
        shutil.rmtree(dense_dir / "shards", ignore_errors=True)
        log(f"dense: {count} vectors in {manifest['parts']['dense']['seconds']} s")
    if faiss_kind not in manifest["parts"]["dense"]["faiss"]:
        import faiss

        started = time.perf_counter()
        index = build_faiss(np.load(dense_dir / "vectors.npy", mmap_mode="r"), faiss_kind)
        tmp = dense_dir / f"faiss-{faiss_kind}.index.partial"
        faiss.write_index(index, str(tmp))
        tmp.replace(dense_dir / f"faiss-{faiss_kind}.index")
        manifest["parts"]["dense"]["faiss"].append(faiss_kind)
        manifest["parts"]["dense"][f"faiss_{faiss_kind}_seconds"] = round(time.perf_counter() - started, 2)
        log(f"faiss {faiss_kind}: built in {manifest['parts']['dense'][f'faiss_{faiss_kind}_seconds']} s")


def write_vectors(dense_dir: Path, vectors: np.ndarray) -> None:
    dense_dir.mkdir(parents=True, exist_ok=True)
    np.save(dense_dir / "vectors.partial.npy", np.ascontiguousarray(vectors, dtype=np.float32))
    (dense_dir / "vectors.partial.npy").replace(dense_dir / "vectors.npy")


def open_dense(directory: Path, part: dict[str, Any], faiss_kind: str, encoder=None,
               asked_encoder: str | None = None, nprobe: int | None = None) -> DenseIndex:
    """The dense index with the query side of its own encoder; another encoder asked for is refused."""
    spec = recorded_spec(part)
    check_query_encoder(spec, asked_encoder, str(directory))
    encoder = encoder or make_encoder(spec)
    if encoder.dimension != part["dimension"]:
        raise IndexMismatchError(f"{directory}: its vectors have {part['dimension']} dimensions but the query encoder "
                                 f"{spec.name!r} gives {encoder.dimension}; were the vectors made by another model?")
    return DenseIndex.load(directory / DenseIndex.DIRNAME, encoder, faiss_kind, nprobe)
