"""Passages longer than an index allows are split where they enter the index, so a budget of B passages has a bound.

Every answer prompt holds up to B passages; one outsized passage (a 127,000-character concept index in a manual)
would make every question overflow the model's context. MedRAG chunks its textbooks at <= 1,000 characters with
200 of overlap; hyporag's default maximum, 1,800 characters of title and text, leaves every passage of the shipped
corpora whole (the longest is 1,696) and cuts a longer one at whitespace into parts `<id>#1`, `<id>#2`, ... that
keep its title. The index manifest records the maximum and every split passage.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from hyporag.foundation.errors import DataError
from hyporag.retrieval.corpus import Passage

MAX_PASSAGE_CHARS = 1800
MIN_PASSAGE_CHARS = 64  # below this a part holds no sentence worth retrieving (and a title takes up to a quarter)
CHARS_PER_TOKEN = 4  # a report's estimate only; the context check counts with the answer model's tokenizer


@dataclass
class SplitReport:
    """The passages that were split: id, title, characters, estimated tokens and parts (first 20 kept)."""

    max_chars: int
    count: int = 0
    parts: int = 0
    examples: list[dict] = field(default_factory=list)

    def as_manifest(self) -> dict:
        return {"max_passage_chars": self.max_chars, "split_passages": self.count, "split_parts": self.parts,
                "split_examples": self.examples}

    def describe(self) -> str:
        first = self.examples[0]
        return (f"{self.count} passage(s) longer than {self.max_chars} characters were split into {self.parts} "
                f"parts (first: {first['id']!r} {first['title']!r}, {first['chars']} characters, ~{first['tokens']} "
                "tokens); the index manifest lists them")


def _chunks(text: str, room: int) -> list[str]:
    """`text` in pieces of at most `room` characters, cut at the last whitespace before the limit when there is one."""
    if room < 1:
        raise ValueError(f"a passage part must hold at least one character, got room for {room}")
    pieces, rest = [], text.strip()
    while len(rest) > room:
        cut = rest.rfind(" ", room // 2, room + 1)
        cut = cut if cut > 0 else room
        pieces.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        pieces.append(rest)
    return pieces


def split_long_passages(passages: Iterable[Passage], report: SplitReport, refuse: bool = False) -> Iterator[Passage]:
    """Each passage, or its parts when title and text exceed `report.max_chars` (`refuse`: one line instead)."""
    for passage in passages:
        size = len(passage.title) + len(passage.contents)
        if size <= report.max_chars:
            yield passage
            continue
        if refuse:
            raise DataError(f"passage {passage.id!r} ({passage.title[:60]!r}) is {size} characters (~"
                            f"{size // CHARS_PER_TOKEN} tokens), over the index's maximum of {report.max_chars}; "
                            "split it in the corpus, or let `index build` split it")
        title = passage.title if len(passage.title) <= report.max_chars // 4 else passage.title[: report.max_chars // 4]
        pieces = _chunks(passage.contents, report.max_chars - len(title))
        report.count += 1
        report.parts += len(pieces)
        if len(report.examples) < 20:
            report.examples.append({"id": passage.id, "title": passage.title[:80], "chars": size,
                                    "tokens": size // CHARS_PER_TOKEN, "parts": len(pieces)})
        for number, piece in enumerate(pieces, start=1):
            yield Passage(f"{passage.id}#{number}", title, piece)
