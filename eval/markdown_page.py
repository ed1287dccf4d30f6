"""A report's markdown (headings, paragraphs, pipe tables) as one self-contained HTML page, every value escaped:
a fit's report.html beside its report.md, linking the validation and held-out runs' own viewer pages."""

from __future__ import annotations

import html
from collections.abc import Sequence

STYLE = ("body{font:14px/1.5 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
         "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px}"
         "td{text-align:right}td:first-child{text-align:left}")


def _row(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def markdown_page(markdown: str, title: str, links: Sequence[tuple[str, str]] = ()) -> str:
    """`links`: (label, relative href) pairs shown under the title."""
    body: list[str] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("# "):
            body.append(f"<h1>{html.escape(line[2:])}</h1>")
        elif line.startswith("|") and i + 1 < len(lines) and set(lines[i + 1].replace("|", "").strip()) <= set("-: "):
            header, i = _row(line), i + 2
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_row(lines[i]))
                i += 1
            body.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in header) + "</tr>" + "".join(
                "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows) + "</table>")
            continue
        elif line.strip():
            body.append(f"<p>{html.escape(line)}</p>")
        i += 1
    nav = " · ".join(f'<a href="{html.escape(href, quote=True)}">{html.escape(label)}</a>' for label, href in links)
    return (f'<!doctype html><html><head><meta charset="utf-8"><meta name="generator" content="hyporag">'
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
            + (f"<nav>{nav}</nav>" if nav else "") + "".join(body) + "</body></html>\n")
