"""Releasing a memory map's pages: RSS falls back by the file's size, and nothing written is lost."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from hyporag.retrieval.mapped import release_pages


def rss_file_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    raise AssertionError("no RssFile line")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_released_pages_leave_rss_and_keep_their_data(tmp_path):
    rows = 64 * 2**20 // (4 * 256)  # 64 MiB of float32 rows
    out = np.lib.format.open_memmap(tmp_path / "v.npy", mode="w+", dtype=np.float32, shape=(rows, 256))
    out[:] = np.arange(256, dtype=np.float32)
    before = rss_file_kib()
    release_pages(out)
    assert before - rss_file_kib() > 48 * 1024  # the written pages no longer count against this process
    del out
    back = np.load(tmp_path / "v.npy", mmap_mode="r")
    assert float(back[:, 7].sum()) == 7.0 * rows  # flushed and readable again
    assert float(back[-1].sum()) == float(np.arange(256).sum())
    touched = rss_file_kib()
    release_pages(back)
    assert touched - rss_file_kib() > 48 * 1024
    release_pages(np.zeros(3))  # a plain array: nothing to release
