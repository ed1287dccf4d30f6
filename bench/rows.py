"""The rows behind docs/results: pack a finished (or stopped) run into docs/results/rows/<name>/ to commit it, unpack
one into a plain results directory to resume or extend it on any machine, and list what is committed with its size.

    .venv/bin/python bench/rows.py pack runs/joint-mmlu-b4 docs/results/rows/joint-mmlu-b4
    .venv/bin/python bench/rows.py unpack docs/results/rows/joint-mmlu-b4 runs/joint-mmlu-b4
    .venv/bin/python bench/rows.py list

`hyporag report docs/results/rows/<name> --out DIR` redraws a run's tables from its packed rows, and every bench
script takes a packed run wherever it takes a run directory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hyporag.eval import pack, unpack  # noqa: E402

ROWS = ROOT / "docs" / "results" / "rows"
LIMIT = 50 * 1024 * 1024  # the committed rows stay under 50 MB in all


def listing() -> int:
    total = 0
    for entry in sorted(ROWS.iterdir()) if ROWS.is_dir() else []:  # packed runs, and the files beside them
        size = sum(f.stat().st_size for f in entry.iterdir()) if entry.is_dir() else entry.stat().st_size
        total += size
        print(f"{entry.name}: {size / 1024:.0f} KiB")
    print(f"total: {total / 1024 / 1024:.2f} MiB of {LIMIT / 1024 / 1024:.0f}")
    return 0 if total <= LIMIT else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="action", required=True)
    for action in ("pack", "unpack"):
        step = sub.add_parser(action)
        step.add_argument("source")
        step.add_argument("target")
    sub.add_parser("list")
    args = parser.parse_args(argv)
    if args.action == "list":
        return listing()
    if args.action == "pack":
        for path in pack(args.source, args.target):
            print(f"written: {path} ({path.stat().st_size / 1024:.0f} KiB)")
        return listing()
    print(f"unpacked: {unpack(args.source, args.target)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
