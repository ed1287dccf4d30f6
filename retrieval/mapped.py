"""Memory-mapped arrays whose pages a long pass releases as it goes, so a build's RSS stays one chunk, not the file.

RSS counts every resident page of a mapped file; a pass over 5M 384-d vectors (7.2 GiB) would otherwise end up
holding all of it, and over MedCorp's 54M vectors far more than any machine's RAM.
"""

from __future__ import annotations

import mmap

import numpy as np


def release_pages(array: np.ndarray) -> None:
    """Drop this process's mapping of the file's pages (MADV_DONTNEED on a shared file mapping: the page cache keeps
    them, written pages included, so nothing is lost and a later read maps them again). No-op on a plain array."""
    mapping = getattr(array, "_mmap", None)
    if not isinstance(mapping, mmap.mmap) or not hasattr(mapping, "madvise"):
        return
    if getattr(array, "mode", "r") in ("r+", "w+"):
        array.flush()
    mapping.madvise(mmap.MADV_DONTNEED)
