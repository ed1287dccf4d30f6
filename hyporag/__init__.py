"""hyporag: decision-useful retrieval for multiple-choice questions, as DSPy programs.

Subpackages: `hyporag.signatures`, `hyporag.programs`, `hyporag.retrieval`, `hyporag.eval`, `hyporag.optimizers`.
"""

from __future__ import annotations

__version__ = "0.1.0"
