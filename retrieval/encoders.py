"""Dense encoders as the papers use them: a query side and a passage side (MedCPT's two models), instruction
prefixes (E5's `query: ` / `passage: `, BGE's query instruction), pooling and maximum lengths.

An index records its `EncoderSpec` in the manifest and queries are always encoded with that spec's query side, so
a query is never embedded by a model that did not make the passage vectors. Presets: `minilm` (the default,
offline from its PyPI package), `medcpt`, `bge-large`, `e5-large-v2`; any sentence-transformers model name or path
works as a symmetric encoder, and a JSON file of EncoderSpec fields describes any other transformers model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from hyporag.foundation.errors import ConfigError, IndexMismatchError, ModelError
from hyporag.retrieval.embedder import DEFAULT_EMBEDDER, HashingEmbedder, SentenceTransformerEmbedder
from hyporag.retrieval.store import passage_text

POOLINGS = ("cls", "mean")
BACKENDS = ("transformers", "sentence-transformers", "hashing")
BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "


@dataclass(frozen=True)
class EncoderSpec:
    """How passages and queries become vectors. `passage_model` None: the query model encodes both sides."""

    name: str
    query_model: str
    passage_model: str | None = None
    backend: str = "transformers"
    pooling: str = "mean"
    query_prefix: str = ""
    passage_prefix: str = ""
    query_max_length: int = 512
    passage_max_length: int = 512
    title_content_pair: bool = False  # MedCPT reads a passage as the tokenizer pair (title, content)
    normalize: bool = True  # unit vectors (inner product = cosine); MedCPT's raw inner product keeps False

    def __post_init__(self) -> None:
        if self.pooling not in POOLINGS:
            raise ConfigError(f"encoder {self.name}: pooling must be one of {', '.join(POOLINGS)}, "
                              f"got {self.pooling!r}")
        if self.backend not in BACKENDS:
            raise ConfigError(f"encoder {self.name}: backend must be one of {', '.join(BACKENDS)}")
        if min(self.query_max_length, self.passage_max_length) < 1:
            raise ConfigError(f"encoder {self.name}: maximum lengths must be >= 1")

    @property
    def hashing_dimension(self) -> int | None:
        """The test embedder's dimension (`hashing-<dim>`), known without loading anything."""
        return int(self.query_model.split("-", 1)[1]) if self.backend == "hashing" else None

    @property
    def symmetric(self) -> bool:
        return self.passage_model in (None, self.query_model)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "encoder spec") -> EncoderSpec:
        known = {f.name for f in fields(cls)}
        strange = sorted(set(data) - known)
        if strange:
            raise ConfigError(f"{source}: unknown encoder field(s) {', '.join(strange)} (known: {', '.join(known)})")
        if "name" not in data or "query_model" not in data:
            raise ConfigError(f"{source}: an encoder spec needs 'name' and 'query_model'")
        return cls(**data)


PRESETS = {spec.name: spec for spec in (
    EncoderSpec("minilm", DEFAULT_EMBEDDER, backend="sentence-transformers", query_max_length=256,
                passage_max_length=256),
    EncoderSpec("medcpt", "ncbi/MedCPT-Query-Encoder", "ncbi/MedCPT-Article-Encoder", pooling="cls",
                query_max_length=64, passage_max_length=512, title_content_pair=True, normalize=False),
    EncoderSpec("bge-large", "BAAI/bge-large-en-v1.5", pooling="cls", query_prefix=BGE_QUERY_INSTRUCTION),
    EncoderSpec("e5-large-v2", "intfloat/e5-large-v2", pooling="mean", query_prefix="query: ",
                passage_prefix="passage: "),
)}
ALIASES = {DEFAULT_EMBEDDER: "minilm", f"sentence-transformers/{DEFAULT_EMBEDDER}": "minilm"}


def encoder_spec(name: str, max_length: int | None = None) -> EncoderSpec:
    """A preset, `hashing-<dim>` (tests), a JSON spec file, or any sentence-transformers model name or path."""
    name = ALIASES.get(name, name)
    if name in PRESETS:
        spec = PRESETS[name]
    elif name.startswith("hashing-"):
        spec = EncoderSpec(name, name, backend="hashing")
    elif name.endswith(".json") and Path(name).is_file():
        try:
            data = json.loads(Path(name).read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{name}: not valid JSON (line {exc.lineno})") from None
        spec = EncoderSpec.from_dict(data, name)
    else:
        spec = EncoderSpec(name, name, backend="sentence-transformers")
    if max_length:
        spec = replace(spec, query_max_length=max_length, passage_max_length=max_length)
    return spec


class _Side:
    """One transformers model and tokenizer, pooled and (optionally) normalised."""

    def __init__(self, model_name: str, spec: EncoderSpec):
        from transformers import AutoModel, AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model_name)
            self.model = AutoModel.from_pretrained(model_name).eval()
        except Exception as exc:  # not on disk, no hub, not a transformers model: one line
            raise ModelError(f"encoder {spec.name}: cannot load {model_name!r} ({type(exc).__name__}: "
                             f"{str(exc).splitlines()[0][:160]})") from None
        self.spec = spec
        self.dimension = int(self.model.config.hidden_size)

    def encode(self, first: Sequence[str], second: Sequence[str] | None, max_length: int,
               batch_size: int) -> np.ndarray:
        import torch

        out = []
        for start in range(0, len(first), batch_size):
            chunk = list(first[start:start + batch_size])
            pair = list(second[start:start + batch_size]) if second is not None else None
            batch = self.tokenizer(chunk, pair, padding=True, truncation=True, max_length=max_length,
                                   return_tensors="pt")
            with torch.no_grad():
                hidden = self.model(**batch).last_hidden_state
            if self.spec.pooling == "cls":
                pooled = hidden[:, 0]
            else:
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            if self.spec.normalize:
                pooled = torch.nn.functional.normalize(pooled, dim=-1)
            out.append(pooled.float().numpy())
        return np.ascontiguousarray(np.concatenate(out) if out else np.zeros((0, self.dimension)), dtype=np.float32)


class TransformerEncoder:
    """A spec run with transformers directly: the pooling, prefixes, lengths and pairs the spec names."""

    def __init__(self, spec: EncoderSpec):
        self.spec, self.name = spec, spec.name
        self.query_side = _Side(spec.query_model, spec)
        self.passage_side = self.query_side if spec.symmetric else _Side(spec.passage_model, spec)
        if self.query_side.dimension != self.passage_side.dimension:
            raise ModelError(f"encoder {spec.name}: query and passage models differ in dimension "
                             f"({self.query_side.dimension} vs {self.passage_side.dimension})")
        self.dimension = self.query_side.dimension

    def encode_queries(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        prefixed = [self.spec.query_prefix + t for t in texts]
        return self.query_side.encode(prefixed, None, self.spec.query_max_length, batch_size)

    def encode_passages(self, passages: Sequence[tuple[str, str]], batch_size: int = 32) -> np.ndarray:
        if self.spec.title_content_pair:
            titles = [self.spec.passage_prefix + t for t, _ in passages]
            return self.passage_side.encode(titles, [c for _, c in passages], self.spec.passage_max_length,
                                            batch_size)
        texts = [self.spec.passage_prefix + passage_text(t, c) for t, c in passages]
        return self.passage_side.encode(texts, None, self.spec.passage_max_length, batch_size)

    encode = encode_queries  # what the dense index calls for queries


class SymmetricEncoder:
    """A sentence-transformers or hashing embedder behind the same two calls, with the spec's prefixes."""

    def __init__(self, spec: EncoderSpec, embedder=None):
        self.spec, self.name = spec, spec.name
        if embedder is not None:
            self.embedder = embedder
        elif spec.backend == "hashing":
            self.embedder = HashingEmbedder(spec.hashing_dimension)
        else:
            self.embedder = SentenceTransformerEmbedder(spec.query_model, max_seq_length=spec.passage_max_length)
        self.dimension = self.embedder.dimension
        self.model = getattr(self.embedder, "model", None)

    def encode_queries(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        return self.embedder.encode([self.spec.query_prefix + t for t in texts], batch_size=batch_size)

    def encode_passages(self, passages: Sequence[tuple[str, str]], batch_size: int = 64) -> np.ndarray:
        return self.embedder.encode([self.spec.passage_prefix + passage_text(t, c) for t, c in passages],
                                    batch_size=batch_size)

    encode = encode_queries


def make_encoder(spec: EncoderSpec):
    return TransformerEncoder(spec) if spec.backend == "transformers" else SymmetricEncoder(spec)


def check_query_encoder(index_spec: EncoderSpec, asked: str | None, where: str) -> None:
    """Refuse a query encoder other than the one that made the index's vectors (one line, naming both)."""
    if asked is None:
        return
    wanted = encoder_spec(asked)
    lengths = ("query_max_length", "passage_max_length")
    if {k: v for k, v in wanted.to_dict().items() if k not in lengths} != {
            k: v for k, v in index_spec.to_dict().items() if k not in lengths}:
        models = index_spec.query_model + ("" if index_spec.symmetric else f" / {index_spec.passage_model}")
        raise IndexMismatchError(f"{where}: its vectors were made by encoder {index_spec.name!r} ({models}); queries "
                                 f"cannot be encoded with {wanted.name!r}; drop --embedder or build an index with it")
