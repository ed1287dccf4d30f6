"""Every relative link in the README and docs/ points at a file that exists (pages move; links must follow)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_relative_link_resolves():
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for match in re.finditer(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            target = match.group(1)
            if not target.startswith(("http://", "https://", "mailto:")) and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_the_readme_stays_a_readable_guide():
    """Details go to docs/; the README stays under 20 KB."""
    assert (ROOT / "README.md").stat().st_size < 20 * 1024
