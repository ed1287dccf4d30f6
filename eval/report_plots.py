"""The report's figures: accuracy with 95% intervals, and the DUR judge's labels (skipped without matplotlib)."""

from __future__ import annotations

import io
from pathlib import Path

from hyporag.eval.summary import summaries
from hyporag.foundation.atomic import write_bytes_atomic


def plots(report: dict, out_dir: Path) -> list[Path]:
    """accuracy.png (95% CI bars) and dur.png (stacked Entailed/Useful/NotUseful); skipped without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    written = []
    methods = summaries(report)
    if methods:
        fig, ax = plt.subplots(figsize=(max(4, 1.1 * len(methods)), 3.2))
        names = [s.method for s in methods]
        acc = [s.accuracy for s in methods]
        err = [[max(0.0, a - s.ci95_low) for a, s in zip(acc, methods, strict=True)],  # float error at 0 or 1
               [max(0.0, s.ci95_high - a) for a, s in zip(acc, methods, strict=True)]]
        ax.bar(names, acc, yerr=err, capsize=4, color="#4C72B0")
        ax.set_ylim(0, 1)
        ax.set_ylabel("accuracy (95% CI)")
        ax.set_title(f"{report['settings'].get('dataset', '')} (n={methods[0].n})")
        ax.tick_params(axis="x", rotation=30)
        fig.tight_layout()
        written.append(_save(fig, out_dir / "accuracy.png"))
        plt.close(fig)
    durs = report["dur"]
    if durs:
        fig, ax = plt.subplots(figsize=(max(4, 1.1 * len(durs)), 3.2))
        names = list(durs)
        bottom = [0.0] * len(names)
        for label, colour in (("Entailed", "#55A868"), ("Useful", "#8172B2"), ("NotUseful", "#C44E52")):
            shares = [durs[m][label] / durs[m]["judged"] for m in names]
            ax.bar(names, shares, bottom=bottom, label=label, color=colour)
            bottom = [b + s for b, s in zip(bottom, shares, strict=True)]
        ax.set_ylim(0, 1)
        ax.set_ylabel("share of questions")
        ax.legend(fontsize=7, loc="upper right")
        ax.tick_params(axis="x", rotation=30)
        fig.tight_layout()
        written.append(_save(fig, out_dir / "dur.png"))
        plt.close(fig)
    return written


def _save(fig, path: Path) -> Path:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    write_bytes_atomic(path, buffer.getvalue())
    return path
