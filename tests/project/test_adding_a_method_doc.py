"""docs/adding-a-method.md's code, run as a method's author would run it: its `my_methods.py` and its
`test_my_methods.py` written to a folder outside hyporag and tested there with pytest."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "adding-a-method.md"


def doc_file(name: str) -> str:
    """The code block that begins with `# <name>`."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    return next(b for b in blocks if b.startswith(f"# {name}"))


def test_the_pages_method_and_its_tests_pass_as_written(tmp_path):
    (tmp_path / "my_methods.py").write_text(doc_file("my_methods.py"), encoding="utf-8")
    (tmp_path / "test_my_methods.py").write_text(doc_file("test_my_methods.py"), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "HYPORAG_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_methods.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout
