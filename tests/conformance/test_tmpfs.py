"""The memory (path and inode API) and passthrough examples against tmpfs
(pyfuse.conformance): the same random operations on a tmpfs directory and on the mount must
give identical results, times included (the passthrough example's source is a tmpfs directory
too)."""
from __future__ import annotations

import os
from typing import Any

import pytest

pytest.importorskip("hypothesis")  # in the test extra; a missing one is reported as a skip

from pyfuse.conformance import check_against  # noqa: E402


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", ["memory", "memory_ll", "memory_ll-no_open", "passthrough"])
def test_matches_tmpfs(tmpfs: Any, example: Any, tmp_path: Any, name: str) -> None:
    """memory_ll-no_open: with the kernel keeping its listings (no OPENDIR, docs/caching.md),
    which every change through the mount must drop."""
    # tmpfs first: set up before the mount, so unmounted after it
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    if name == "memory_ll-no_open":
        example("memory_ll", "-o", "no_open", mountpoint=mnt)
    elif name in ("memory", "memory_ll"):
        example(name, mountpoint=mnt)
    else:
        example("passthrough", tmpfs(), mountpoint=mnt)
    examples = int(os.environ.get("PYFUSE_CONFORMANCE_EXAMPLES", "40"))
    check_against(tmpfs(), mnt, max_examples=examples, steps=40)
