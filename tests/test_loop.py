"""The multi-threaded loops: libfuse's (the default) and pyfuse's own (``sticky=True``,
csrc/loop.c), on which quick requests stay on one worker thread. On both, a handler that
blocks gets others reading, up to ``max_threads``, and no further."""
from __future__ import annotations

import collections
import errno
import os
import stat
import threading
import time
from typing import Any, Optional

import pytest

import pyfuse
from pyfuse import Attr, FuseError

NOCACHE = pyfuse.Config(entry_timeout=0, attr_timeout=0, negative_timeout=0)


class Threads(pyfuse.Operations):
    """/f, whose reads wait for ``gate`` (when set) or sleep ``delay``; records which thread
    served each getattr and read."""

    def __init__(self, gate: Optional[threading.Barrier] = None, delay: float = 0.0) -> None:
        self.gate, self.delay = gate, delay
        self.getattr_threads: collections.Counter[int] = collections.Counter()
        self.getattr_order: list[int] = []
        self.read_threads: set[int] = set()
        self.lock = threading.Lock()

    def getattr(self, path: str, fh: Optional[int]) -> Attr:
        with self.lock:
            self.getattr_threads[threading.get_ident()] += 1
            self.getattr_order.append(threading.get_ident())
        if path == "/":
            return Attr(mode=stat.S_IFDIR | 0o755, nlink=2)
        if path == "/f":
            return Attr(mode=stat.S_IFREG | 0o644, nlink=1, size=100)
        raise FuseError(errno.ENOENT)

    def open(self, path: str, flags: int) -> pyfuse.FileInfo:
        return pyfuse.FileInfo(direct_io=True)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        with self.lock:
            self.read_threads.add(threading.get_ident())
        if self.gate is not None:
            try:
                self.gate.wait(20)
            except threading.BrokenBarrierError:
                raise FuseError(errno.ETIMEDOUT) from None
        time.sleep(self.delay)
        return b"x"


def _read_in_threads(mnt: str, n: int) -> list[Any]:
    results: list[Any] = [None] * n

    def one(i: int) -> None:
        try:
            with open(os.path.join(mnt, "f"), "rb", buffering=0) as f:
                results[i] = f.read(1)
        except OSError as e:
            results[i] = e

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


@pytest.mark.timeout(60)
def test_quick_requests_stay_on_one_thread(mount_ops: Any, mnt: str) -> None:
    """sticky=True: one client's requests, one after another, are served by the same worker
    (libfuse's loop hands them to its idle workers in turn), unless a request takes over a
    millisecond. A slow request (a preempted CPU, a sanitizer build) hands the reading over
    once, so what is counted is how often the serving thread changes, not how the requests
    split between threads."""
    ops = Threads()
    mount_ops(ops, config=NOCACHE, sticky=True)
    for _ in range(500):
        os.stat(os.path.join(mnt, "f"))
    order = ops.getattr_order
    changes = sum(a != b for a, b in zip(order, order[1:]))
    assert changes <= 0.1 * len(order), (changes, len(order), ops.getattr_threads)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("sticky", [False, True], ids=["libfuse", "sticky"])
def test_blocked_handlers_get_more_workers(mount_ops: Any, mnt: str, sticky: bool) -> None:
    """Five reads that each wait for all five: they can only finish if five workers serve at
    once, so the loop must add readers while handlers block."""
    ops = Threads(gate=threading.Barrier(5))
    mount_ops(ops, max_threads=5, sticky=sticky)
    assert _read_in_threads(mnt, 5) == [b"x"] * 5
    assert len(ops.read_threads) == 5


@pytest.mark.timeout(60)
@pytest.mark.parametrize("sticky", [False, True], ids=["libfuse", "sticky"])
def test_max_threads_bounds_workers(mount_ops: Any, mnt: str, sticky: bool) -> None:
    ops = Threads(delay=0.1)
    mount_ops(ops, max_threads=2, sticky=sticky)
    assert _read_in_threads(mnt, 6) == [b"x"] * 6
    assert len(ops.read_threads) == 2
    assert len(ops.getattr_threads.keys() | ops.read_threads) <= 2


def test_sticky_and_clone_fd_refused_together(mnt: str) -> None:
    with pytest.raises(ValueError, match="sticky=True.*clone_fd=True"):
        pyfuse.Session(Threads(), mnt, sticky=True, clone_fd=True)
