"""`hyporag view RUN_DIR [RUN_DIR ...]`: the runs as one self-contained HTML page (or served, drawn on each load)."""

from __future__ import annotations

import argparse

from hyporag.eval.viewer import serve_view, write_view


def add_parser(sub) -> None:
    view = sub.add_parser("view", help="one self-contained HTML page of runs: summary, question table, side by side")
    view.add_argument("run_dirs", nargs="+", help="run directories, or folders holding them (a reproduce grid, a fit)")
    view.add_argument("--out", help="the HTML file to write (default: RUN_DIR/report.html for one run, "
                                    "DIR/runs.html for a folder of runs such as a fit, else ./report.html)")
    view.add_argument("--index-dir", help="the index whose passages to show, for a run that did not record its own")
    view.add_argument("--serve", action="store_true", help="serve on 127.0.0.1 instead, redrawn on every reload")
    view.add_argument("--port", type=int, default=8765)


def run(args: argparse.Namespace) -> int:
    if args.serve:
        serve_view(args.run_dirs, args.port, index_dir=args.index_dir)
        return 0
    print(f"written: {write_view(args.run_dirs, args.out, index_dir=args.index_dir)}")
    return 0
