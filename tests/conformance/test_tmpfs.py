"""The memory and passthrough examples against tmpfs (pyfuse.conformance): the same random
operations on a tmpfs directory and on the mount must give identical results."""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any, Iterator

import pytest

pytest.importorskip("hypothesis")  # in the test extra; a missing one is reported as a skip

from pyfuse.conformance import check_against  # noqa: E402

SHM = "/dev/shm"


@pytest.fixture
def tmpfs() -> Iterator[Any]:
    """tmpfs() -> a new directory on tmpfs (/dev/shm), removed at teardown."""
    made: list[str] = []

    def make() -> str:
        made.append(tempfile.mkdtemp(prefix="pyfuse-", dir=SHM))
        return made[-1]

    yield make
    for d in made:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", ["memory", "passthrough"])
def test_matches_tmpfs(example: Any, tmp_path: Any, tmpfs: Any, name: str) -> None:
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    if name == "memory":
        example("memory", mountpoint=mnt)
    else:
        example("passthrough", tmpfs(), mountpoint=mnt)
    examples = int(os.environ.get("PYFUSE_CONFORMANCE_EXAMPLES", "40"))
    check_against(tmpfs(), mnt, max_examples=examples, steps=40)
