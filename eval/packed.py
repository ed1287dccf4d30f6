"""A packed run: a results directory's record (results.jsonl, questions.jsonl, run.json) gzip-compressed, as the rows
behind docs/results are committed (docs/results/rows/). Every reader of a run (report, view, the gate, the plan, the
bench scripts) reads a packed one as it reads the plain one; nothing writes into it. `unpack` gives back a plain
directory a run resumes in, on any machine.

Packing is byte-deterministic (gzip's timestamp is fixed at 0), so packing the same run twice changes nothing in git.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from hyporag.foundation.atomic import write_bytes_atomic
from hyporag.foundation.errors import HyporagError

SUFFIX = ".gz"
RECORD = ("results.jsonl", "questions.jsonl", "run.json")
# where the packing machine kept the data and the index: not evidence, and not to be committed; a resume never
# compares them (the index is checked by its fingerprint, the questions by theirs), and it records its own
MACHINE_PATHS = ("dataset_source", "index_dir")


def record_file(directory: str | Path, name: str) -> Path:
    """The run's file `name`, plain or packed (the plain one where both are); the plain path where neither is."""
    plain = Path(directory) / name
    packed = plain.with_name(name + SUFFIX)
    return packed if not plain.is_file() and packed.is_file() else plain


def is_packed(directory: str | Path) -> bool:
    return record_file(directory, "run.json").suffix == SUFFIX


def read_bytes(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.suffix == SUFFIX else path.read_bytes()


def pack(run_dir: str | Path, into: str | Path) -> list[Path]:
    """The run's record, compressed into `into` (a folder of its own); refuses a run still missing its rows."""
    run_dir, into = Path(run_dir), Path(into)
    missing = [n for n in ("results.jsonl", "run.json") if not (run_dir / n).is_file()]
    if missing:
        raise HyporagError(f"{run_dir}: not a results directory of `hyporag eval` (no {', '.join(missing)})")
    into.mkdir(parents=True, exist_ok=True)
    written = []
    for name in RECORD:
        if (run_dir / name).is_file():
            raw = (run_dir / name).read_bytes()
            if name == "run.json":
                record = json.loads(raw)
                raw = json.dumps({**record, **{k: None for k in MACHINE_PATHS if k in record}}, indent=2).encode()
            data = gzip.compress(raw, compresslevel=9, mtime=0)
            write_bytes_atomic(into / (name + SUFFIX), data)
            written.append(into / (name + SUFFIX))
    return written


def unpack(packed: str | Path, into: str | Path) -> Path:
    """A packed run as a plain results directory, to resume or extend it; never over a directory that holds rows."""
    packed, into = Path(packed), Path(into)
    if not is_packed(packed):
        raise HyporagError(f"{packed}: not a packed run (no run.json{SUFFIX})")
    if (into / "results.jsonl").exists() or (into / "run.json").exists():
        raise HyporagError(f"{into}: holds a run already; unpack into a new directory (nothing overwritten)")
    into.mkdir(parents=True, exist_ok=True)
    for name in RECORD:
        source = packed / (name + SUFFIX)
        if source.is_file():
            with gzip.open(source, "rb") as reader, (into / name).open("wb") as writer:
                shutil.copyfileobj(reader, writer)
    return into
