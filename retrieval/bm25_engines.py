"""Which engine holds an index's BM25 part: bm25s (exact scores over every passage) or tantivy (pruning).

Both index bm25s's tokens, so their rankings share terms and document lengths (docs/scale.md: top-15 overlap and
latency of each at 71k, 1M and 5M passages on the queries hyporag sends). `auto` picks by the corpus's size: up to
5M passages (the largest size measured) bm25s is faster on most of the queries hyporag sends and gives today's
exact ranking; tantivy's block-max WAND grows more slowly with the corpus, and from `TANTIVY_FROM` passages the growth
exponents measured between 1M and 5M put it ahead on the paper methods' queries too (an extrapolation, stated so in
docs/scale.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hyporag.errors import ConfigError, IndexMismatchError

ENGINES = ("bm25s", "tantivy")
CHOICES = ("auto", *ENGINES)
TANTIVY_FROM = 25_000_000  # passages; docs/scale.md, "BM25 engines on the queries hyporag sends"


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
        from hyporag.retrieval.bm25 import BM25Index

        return BM25Index
    if name == "tantivy":
        from hyporag.retrieval.bm25_tantivy import TantivyBM25Index

        return TantivyBM25Index
    raise ConfigError(f"unknown BM25 engine {name!r}: use one of {', '.join(ENGINES)}")


def part_record(name: str) -> dict:
    """What the manifest keeps of a BM25 part: enough to tell two engines' (or two settings') scores apart."""
    from hyporag.retrieval.bm25 import TOKENIZER

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
    from hyporag.retrieval.bm25 import SEARCHES

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
