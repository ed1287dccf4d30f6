"""MedRAG's corpora by name through the Hugging Face hub, streamed into the cache once in MedRAG's snippet format.

`MedRAG/pubmed` alone is 23.9M snippets, so a corpus is streamed (never held in memory), written line by line to
`<cache>/corpora/<owner>__<name>.jsonl`, and an interrupted download resumes after its last complete line. The
file is then a corpus like any local one: it streams, fingerprints and indexes the same way.
"""

from __future__ import annotations

import json
from pathlib import Path

from hyporag.foundation.errors import DataError
from hyporag.foundation.hub import hub_load

HUB_CORPORA: dict[str, tuple[str, ...]] = {
    "textbooks": ("MedRAG/textbooks",),
    "pubmed": ("MedRAG/pubmed",),
    "statpearls": ("MedRAG/statpearls",),
    "wikipedia": ("MedRAG/wikipedia",),
}
HUB_CORPORA["medcorp"] = tuple(ids[0] for ids in HUB_CORPORA.values())  # MedRAG's MedCorp: all four


def snippet(record: dict) -> dict:
    """A hub row in MedRAG's snippet format: id, title, content and contents (= "title. content")."""
    content = str(record.get("content") or record.get("contents") or "")
    title = str(record.get("title") or "")
    return {"id": str(record["id"]), "title": title, "content": content,
            "contents": f"{title}. {content}" if title else content}


def _complete_lines(partial: Path) -> int:
    """Lines fully written by an interrupted download; a torn last line is cut off."""
    if not partial.exists():
        return 0
    data = partial.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep != len(data):
        with partial.open("r+b") as handle:
            handle.truncate(keep)
    return data[:keep].count(b"\n")


def materialise(hub_id: str, target: Path, progress: bool = True) -> Path:
    """Stream one hub corpus into `target` (resuming a partial download); returns the finished file."""
    from tqdm import tqdm


    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    done = _complete_lines(partial)
    rows = hub_load(hub_id, split="train", streaming=True)
    if done:
        rows = rows.skip(done)
    with partial.open("a", encoding="utf-8") as out, tqdm(desc=hub_id, unit="snippet", initial=done,
                                                          disable=not progress) as bar:
        for number, record in enumerate(rows, start=done + 1):
            try:
                out.write(json.dumps(snippet(record), ensure_ascii=False) + "\n")
            except KeyError:
                raise DataError(f"{hub_id}: row {number} has no 'id'; is it a MedRAG snippet corpus?") from None
            bar.update(1)
    partial.replace(target)
    return target


def hub_files(name: str, cache: Path, progress: bool = True) -> list[Path]:
    """The cached JSONL files of a named hub corpus, downloading what is missing."""
    return [materialise(hub_id, cache / f"{hub_id.replace('/', '__')}.jsonl", progress)
            for hub_id in HUB_CORPORA[name]]
