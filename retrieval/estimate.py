"""What a build will cost, said before it starts: peak RAM, disk and time, from the corpus size and the parts asked
for; a build whose peak RAM cannot fit is refused in one line that names what would fit.

The per-item figures are this machine's (2 cores): BM25 ~0.03 KB of index per token and ~20k passages/s,
MiniLM ~25 passages/s on CPU, a large (335M-parameter) encoder ~2 passages/s; they are estimates, printed as such.
"""

from __future__ import annotations

from dataclasses import dataclass

from hyporag.foundation.errors import ConfigError

GIB = 1 << 30
DIMENSIONS = {"minilm": 384, "medcpt": 768, "bge-large": 1024, "e5-large-v2": 1024}
PASSAGES_PER_SECOND = {"minilm": 25.0, "medcpt": 4.0, "bge-large": 2.0, "e5-large-v2": 2.0}
BM25_PASSAGES_PER_SECOND = 20_000.0
BM25_BYTES_PER_TOKEN = 5.0  # data + indices (8 bytes) per unique (passage, term), ~0.6 unique per token


@dataclass(frozen=True)
class BuildEstimate:
    passages: int
    ram_bytes: float
    disk_bytes: float
    seconds: float
    dense_kind: str | None
    forward_bytes: float = 0.0  # the two-stage BM25 search's forward index, within disk_bytes

    def describe(self) -> str:
        hours = self.seconds / 3600
        duration = f"{hours:.1f} h" if hours >= 1 else f"{self.seconds / 60:.0f} min"
        forward = f" (the BM25 forward index {self.forward_bytes / GIB:.1f} GiB of it)" if self.forward_bytes else ""
        return (f"estimated: peak RAM {self.ram_bytes / GIB:.1f} GiB, disk {self.disk_bytes / GIB:.1f} GiB{forward}, "
                f"time {duration} for {self.passages:,} passages")


def dense_ram(passages: int, dimension: int, kind: str) -> float:
    """Bytes FAISS holds while building `kind` (vectors stay on disk, memory-mapped, except in a flat/HNSW index)."""
    full = passages * dimension * 4.0
    return {"flat": full, "hnsw": full + passages * 32 * 8, "ivf": full}.get(kind, passages * (dimension / 4 + 8))


def estimate(passages: int, total_chars: int, retriever: str, encoder: str, faiss_kind: str,
             precomputed: bool, dimension: int | None = None, bm25_forward: bool = False) -> BuildEstimate:
    """`bm25_forward`: the two-stage search's forward index, as large on disk as the BM25 part itself."""
    tokens = total_chars / 6
    ram = 50_000 * 1_500.0 + 8e6  # one BM25 batch of texts and a vocabulary
    disk = seconds = forward = 0.0
    disk += total_chars * 1.2  # the passage store
    if retriever in ("bm25", "both"):
        forward = tokens * BM25_BYTES_PER_TOKEN if bm25_forward else 0.0
        disk += tokens * BM25_BYTES_PER_TOKEN + forward
        seconds += passages / BM25_PASSAGES_PER_SECOND * (1.05 if bm25_forward else 1)  # 1M: 3.4 s against 80 s
    kind = None
    if retriever in ("dense", "both"):
        kind = faiss_kind
        d = dimension or DIMENSIONS.get(encoder, 768)
        disk += passages * d * 4.0 + dense_ram(passages, d, faiss_kind)
        ram = max(ram, dense_ram(passages, d, faiss_kind) + (0 if faiss_kind == "flat" else 64 * 4096 * d * 4.0))
        if not precomputed:
            seconds += passages / PASSAGES_PER_SECOND.get(encoder, 2.0)
    return BuildEstimate(passages, ram, disk, seconds, kind, forward)


def meminfo_bytes(field: str) -> float | None:
    """One field of /proc/meminfo (MemAvailable, MemTotal) in bytes; None where it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(f"{field}:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def available_ram() -> float:
    """MemAvailable in bytes; infinite where it cannot be read."""
    available = meminfo_bytes("MemAvailable")
    return float("inf") if available is None else available


def refuse_if_too_big(plan: BuildEstimate, available: float, fraction: float = 0.8) -> None:
    if plan.ram_bytes <= fraction * available:
        return
    hint = ("--faiss ivfpq (vectors compressed to d/4 bytes, memory-mapped)" if plan.dense_kind in ("flat", "hnsw",
            "ivf") else "a smaller corpus, or a machine with more RAM")
    what = f"{plan.dense_kind} FAISS" if plan.dense_kind else "a BM25 batch"
    raise ConfigError(f"index build would need ~{plan.ram_bytes / GIB:.1f} GiB of RAM at its peak ({what} over "
                      f"{plan.passages:,} passages) but {available / GIB:.1f} GiB is available; use {hint}")
