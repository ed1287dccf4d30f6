"""Corpora by name, streamed passage by passage: `(id, title, contents)`.

A corpus is read once, when an index is built; queries then look passages up in the index's own store. The
fingerprint (a hash of every file's bytes) ties an index to the exact corpus it was built from.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from hyporag.foundation.errors import DataError
from hyporag.foundation.paths import cache_dir, data_root
from hyporag.retrieval.hub_corpus import HUB_CORPORA, hub_files


class Passage(NamedTuple):
    """One retrievable unit of text."""

    id: str
    title: str
    contents: str


CORPORA: dict[str, tuple[str, ...]] = {
    "textbooks": ("corpus/textbooks",),
    "openstax": ("corpus/openstax",),
    "medquad": ("corpus/medquad",),
    "medcorp-local": ("corpus/textbooks", "corpus/openstax", "corpus/medquad"),
}


@dataclass
class Corpus:
    """A named set of JSONL passage files; iterate it to stream passages, in a stable order.

    `source` is where it was read (an absolute path, or the hub id) and tells two corpora of one name apart;
    `spec` is what to pass to `--corpus` to get it again (its name, or its path)."""

    name: str
    files: list[Path]
    source: str
    empty_skipped: int = 0
    spec: str = ""

    def __post_init__(self) -> None:
        self.spec = self.spec or self.name

    def __iter__(self) -> Iterator[Passage]:
        self.empty_skipped = 0
        seen: set[str] = set()
        total = 0
        for path in self.files:
            for number, passage in _read_passages(path):
                if passage is None:
                    self.empty_skipped += 1
                    continue
                if passage.id in seen:
                    raise DataError(f"{path}:{number}: duplicate passage id {passage.id!r}")
                seen.add(passage.id)
                total += 1
                yield passage
        if total == 0:
            raise DataError(f"corpus {self.name!r} ({self.source}) has no passages with text")

    def count(self) -> int:
        """Number of non-empty lines, without parsing (what `data list` prints)."""
        total = 0
        for path in self.files:
            with path.open("rb") as handle:
                total += sum(1 for line in handle if line.strip())
        return total

    def fingerprint(self) -> str:
        """sha256 over each file's name and bytes: any edit to the corpus changes it."""
        digest = hashlib.sha256()
        for path in self.files:
            digest.update(path.name.encode())
            with path.open("rb") as handle:
                for block in iter(lambda h=handle: h.read(1 << 20), b""):
                    digest.update(block)
        return digest.hexdigest()


def _read_passages(path: Path) -> Iterator[tuple[int, Passage | None]]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise DataError(f"{path}:{number}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{number}: not JSON ({exc.msg})") from None
            if not isinstance(record, dict) or "id" not in record:
                raise DataError(f"{path}:{number}: passage needs an 'id' field")
            # MedRAG's snippets carry both `content` and `contents` (= "title. content"): the title is added back
            # when the passage is indexed, so `content` is read first
            contents = str(record.get("content") or record.get("contents") or "").strip()
            if not contents:
                yield number, None
                continue
            yield number, Passage(str(record["id"]), str(record.get("title") or ""), contents)


def _files_under(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.jsonl")) if directory.is_dir() else []


def load_corpus(name_or_path: str, data_dir: str | Path | None = None) -> Corpus:
    """Resolve a corpus by name (local data dir first, hub second) or by a JSONL file/directory path."""


    if name_or_path not in CORPORA and name_or_path not in HUB_CORPORA:
        path = Path(name_or_path)
        files = [path] if path.is_file() else _files_under(path)
        if not files:
            raise DataError(f"unknown corpus {name_or_path!r}: use one of {', '.join({**CORPORA, **HUB_CORPORA})} "
                            "or a JSONL path/dir")
        return Corpus(path.stem, files, str(path.resolve()), spec=str(path.resolve()))
    root = data_root(data_dir)
    if root is not None and name_or_path in CORPORA:
        files = [f for sub in CORPORA[name_or_path] for f in _files_under(root / sub)]
        if files:
            return Corpus(name_or_path, files, str((root / "corpus").resolve()))
    if name_or_path in HUB_CORPORA:
        return _hub_corpus(name_or_path)
    raise DataError(f"corpus {name_or_path!r}: no JSONL files under {root or 'a data dir'}/corpus and no hub copy")


def _hub_corpus(name: str) -> Corpus:
    """Stream a hub corpus into the cache once, so it streams and fingerprints like a local one."""

    files = hub_files(name, cache_dir("corpora"))
    return Corpus(name, files, "huggingface-hub:" + ",".join(HUB_CORPORA[name]))
