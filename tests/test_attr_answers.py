"""Attributes answered by address (PYFUSE_REPLY_AT, docs/design.md): a synchronous lookup or
getattr that returns a plain ``Attr`` gives C the object's own memory, which C converts once
the callback has returned, while the session holds the object (``Session._keep[slot]``). Each
test checks what the kernel got, on both APIs: attributes made afresh for every request and
dropped by the filesystem at once (C must read them while they are still alive), from many
threads at once (each its own), and an ``Attr`` the filesystem changes between requests (C
reads it as it is at the answer, nothing cached)."""
from __future__ import annotations

import errno
import gc
import os
import stat
import threading
from typing import Any, Optional

import pytest

import pyfuse
import pyfuse.lowlevel as ll
from pyfuse import Attr, FuseError

pytestmark = pytest.mark.timeout(120)

N = 16  # files f0 ... f15; file k: ino 10 + k, size 1000 + k, mtime k seconds, mode 0o600 + k
NOCACHE = pyfuse.Config(entry_timeout=0, attr_timeout=0, negative_timeout=0)


def fresh(k: int) -> Attr:
    """File k's attributes, a new object each call (the filesystem keeps no reference)."""
    return Attr(mode=stat.S_IFREG | (0o600 + k), ino=10 + k, nlink=1, size=1000 + k,
                mtime_ns=k * 1_000_000_000)


def _churn() -> None:
    """Reuse freed memory: Attrs of other values where a dropped one may have been."""
    junk = [Attr(mode=stat.S_IFDIR, ino=99, size=7) for _ in range(50)]
    del junk
    gc.collect(0)


class Fresh(ll.Operations):
    def lookup(self, parent: int, name: str) -> Attr:
        if parent == 1 and name.startswith("f") and name[1:].isdigit() and int(name[1:]) < N:
            _churn()
            return fresh(int(name[1:]))
        raise FuseError(errno.ENOENT)

    def getattr(self, ino: int, fh: Optional[int]) -> Attr:
        if ino == 1:
            return Attr(mode=stat.S_IFDIR | 0o755, ino=1, nlink=2)
        _churn()
        return fresh(ino - 10)


class FreshPath(pyfuse.Operations):
    def getattr(self, path: str, fh: Optional[int]) -> Attr:
        if path == "/":
            return Attr(mode=stat.S_IFDIR | 0o755, nlink=2)
        name = path[1:]
        if name.startswith("f") and name[1:].isdigit() and int(name[1:]) < N:
            _churn()
            return fresh(int(name[1:]))
        raise FuseError(errno.ENOENT)


def _check_all(mnt: str, api: str, threads: int = 8, rounds: int = 40) -> None:
    """Every thread stats every file ``rounds`` times: each stat is its own file's (its
    inode number too on the inode API; libfuse numbers the path API's)."""
    bad: list[Any] = []

    def client(t: int) -> None:
        for r in range(rounds):
            k = (t + r) % N
            st = os.stat(os.path.join(mnt, f"f{k}"))
            got = (st.st_ino if api == "inode" else 0, st.st_size, st.st_mode, st.st_mtime_ns)
            want = (10 + k if api == "inode" else 0, 1000 + k, stat.S_IFREG | (0o600 + k),
                    k * 1_000_000_000)
            if got != want:
                bad.append((k, got, want))

    workers = [threading.Thread(target=client, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not bad, bad[:5]


@pytest.mark.parametrize("api", ["inode", "path"])
def test_fresh_attributes_from_many_threads(mount_ops: Any, mnt: str, api: str) -> None:
    """Attributes made for each request and dropped at once reach the kernel whole, each
    thread's its own (every timeout 0: every stat asks the filesystem)."""
    if api == "inode":
        mount_ops(Fresh(), config=NOCACHE)
    else:
        mount_ops(FreshPath(), config=NOCACHE)
    _check_all(mnt, api)


@pytest.mark.parametrize("api", ["inode", "path"])
def test_single_threaded(mount_ops: Any, mnt: str, api: str) -> None:
    """The same on a single-threaded loop (one slot, reused by every request)."""
    if api == "inode":
        mount_ops(Fresh(), config=NOCACHE, threads=False)
    else:
        mount_ops(FreshPath(), config=NOCACHE, threads=False)
    _check_all(mnt, api, threads=1, rounds=200)


class Kept(ll.Operations):
    """One file whose Attr the filesystem keeps and changes between requests."""

    def __init__(self) -> None:
        self.attr = Attr(mode=stat.S_IFREG | 0o644, ino=5, nlink=1, size=1)

    def lookup(self, parent: int, name: str) -> Attr:
        if parent == 1 and name == "f":
            return self.attr
        raise FuseError(errno.ENOENT)

    def getattr(self, ino: int, fh: Optional[int]) -> Attr:
        if ino == 1:
            return Attr(mode=stat.S_IFDIR | 0o755, ino=1, nlink=2)
        return self.attr


def test_a_kept_attr_is_read_as_it_is_at_the_answer(mount_ops: Any, mnt: str) -> None:
    ops = Kept()
    s = mount_ops(ops, config=NOCACHE)
    p = os.path.join(mnt, "f")
    for size in (1, 5000, 0, 1 << 40):
        ops.attr.size = size
        assert os.stat(p).st_size == size
    # the session holds what its threads last answered, nothing else
    kept = [a for a in s._keep if a is not None]
    assert kept and all(a is ops.attr or a.ino == 1 for a in kept), kept
