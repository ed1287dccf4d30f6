"""Which engine holds an index's BM25 part: bm25s (exact scores over every passage, on hyporag's compiled loop) or
tantivy (pruning).

Both index bm25s's tokens, so their rankings share terms and document lengths (docs/results/scale.md: top-15 overlap and
latency of each at 1M and 5M passages on the queries hyporag sends). On the compiled loop bm25s is the faster engine
on every query set measured, and its cost is the floor Σdf x ns per posting, linear in the corpus; tantivy's pruning
also stays linear, at a higher cost per query. What bm25s needs is its arrays in memory: an exhaustive search reads
every posting of the query's terms, so `auto` picks bm25s while its index (~400 bytes a passage) fits in half of
this machine's RAM, and tantivy (a quarter of the disk, block-max WAND) beyond, where bm25s would read from disk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hyporag.foundation.errors import ConfigError, IndexMismatchError
from hyporag.retrieval.bm25 import SEARCHES, TOKENIZER, BM25Index
from hyporag.retrieval.bm25_tantivy import TantivyBM25Index
from hyporag.retrieval.estimate import meminfo_bytes

ENGINES = ("bm25s", "tantivy")
CHOICES = ("auto", *ENGINES)
BM25S_BYTES_PER_PASSAGE = 400  # bm25s's index per passage: 403 MB at 1M, 2,005 MB at 5M (docs/results/scale.md)
RAM_SHARE = 0.5  # of physical RAM that bm25s's arrays may take in the page cache


def tantivy_from(ram: float | None) -> int:
    """The corpus size from which `auto` builds tantivy: bm25s's index would outgrow RAM_SHARE of `ram`."""
    return int(RAM_SHARE * ram / BM25S_BYTES_PER_PASSAGE) if ram else 25_000_000


TANTIVY_FROM = tantivy_from(meminfo_bytes("MemTotal"))  # passages, on this machine (24 GiB: ~31.6M)


def resolve_engine(name: str, passages: int) -> str:
    """The engine a build uses: the one named, or for `auto` the faster one at this many passages."""
    if name not in CHOICES:
        raise ConfigError(f"unknown BM25 engine {name!r}: use one of {', '.join(CHOICES)}")
    if name != "auto":
        return name
    return "tantivy" if passages >= TANTIVY_FROM else "bm25s"


def engine_class(name: str):
    """The index class of an engine (tantivy imported only when asked for)."""
    if name == "bm25s":
        return BM25Index
    if name == "tantivy":
        return TantivyBM25Index
    raise ConfigError(f"unknown BM25 engine {name!r}: use one of {', '.join(ENGINES)}")


def part_record(name: str) -> dict:
    """What the manifest keeps of a BM25 part: enough to tell two engines' (or two settings') scores apart."""

    cls = engine_class(name)
    return {"engine": name, "tokenizer": TOKENIZER, "k1": cls.K1, "b": cls.B}


def bm25_part_wanted(directory: Path, manifest: dict[str, Any], asked: str, force: bool) -> bool:
    """Whether the BM25 part is to be built: it is missing, or `force` replaces another engine's that was asked
    away from. Without `force`, another engine's finished part is never replaced (the user built it)."""
    done = manifest["parts"].get("bm25")
    if done is None:
        return True
    have = done.get("engine", "bm25s")
    if asked in ("auto", have):
        return False
    if not force:
        raise IndexMismatchError(f"{directory}: its BM25 part was built by {have!r}, not {asked!r}; pass --force to "
                                 "replace it, or choose another --index-dir")
    del manifest["parts"]["bm25"]
    return True


def bm25_engine_of(directory: Path, manifest: dict[str, Any], asked: str | None) -> str:
    """The engine that built the BM25 part (indexes from before the field: bm25s); an engine this hyporag does not
    search, or one other than the engine asked for, is refused naming the rebuild."""
    engine = (manifest["parts"].get("bm25") or {}).get("engine", "bm25s")
    rebuild = f"`hyporag index build --corpus {manifest.get('corpus_spec') or '<corpus>'} --index-dir {directory}"
    if engine not in ENGINES:
        raise IndexMismatchError(f"{directory}: its BM25 part was built by the {engine!r} engine, which this hyporag "
                                 f"does not search (it searches {', '.join(ENGINES)}); rebuild it with {rebuild} "
                                 "--force`")
    if asked not in (None, "auto", engine) and "bm25" in manifest["parts"]:
        raise IndexMismatchError(f"{directory}: its BM25 part was built by {engine!r}, not the {asked!r} asked for; "
                                 f"drop --bm25-engine, or rebuild it with {rebuild} --bm25-engine {asked} --force`")
    return engine


def check_search(directory: Path, manifest: dict[str, Any], asked: str | None) -> str:
    """The BM25 search a load uses (exact unless asked): two-stage needs the forward index part, built by bm25s."""

    search = asked or "exact"
    if search not in SEARCHES:
        raise ConfigError(f"unknown BM25 search {search!r}: use one of {', '.join(SEARCHES)}")
    if search == "two-stage" and "bm25_forward" not in manifest["parts"]:
        raise IndexMismatchError(f"{directory}: no forward index for the two-stage BM25 search; add one with "
                                 f"`hyporag index build --corpus {manifest.get('corpus_spec') or '<corpus>'} "
                                 f"--index-dir {directory} --bm25-search two-stage` (the built parts are reused)")
    return search


def search_of_retriever(retriever) -> str | None:
    """The BM25 search a retriever runs (exact or two-stage; None without a BM25 part)."""
    bm25 = getattr(retriever, "bm25", None)
    return getattr(bm25, "search", "exact") if bm25 is not None else None


def engine_of_retriever(retriever) -> str | None:
    """The BM25 engine a retriever searches with (None: no BM25 part, or a stand-in retriever of a test)."""
    bm25 = getattr(retriever, "bm25", None)
    return getattr(bm25, "ENGINE", None) if bm25 is not None else None
