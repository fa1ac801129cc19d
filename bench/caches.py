"""What the kernel's caches save: the requests it sends for the same client work done a second
time, with and without each cache (docs/caching.md has the table this prints).

    python bench/caches.py [MOUNTPOINT]

Each line mounts one of tests/test_caching.py's filesystems on the inode API with libfuse's
request trace on, does the work once (warm), then again, counting the trace's ``opcode:``
lines of the second time, and its wall time.
"""
from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
from typing import Any, Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests"))

from test_caching import CachedListing, PlainListing, Tree  # noqa: E402

import pyfuse  # noqa: E402
import pyfuse.lowlevel as ll  # noqa: E402


class Counter(logging.Handler):
    """Counts the requests of libfuse's trace (the pyfuse logger at DEBUG)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if "opcode: " in msg:
            op = msg.split("opcode: ", 1)[1].split(" ", 1)[0]
            self.ops[op] = self.ops.get(op, 0) + 1


class Timeouts(Tree):
    """Tree, with its entries' timeouts ``t``."""

    def __init__(self, t: float) -> None:
        super().__init__()
        self.t = t

    def lookup(self, parent: int, name: str) -> ll.Entry:
        e = super().lookup(parent, name)
        return ll.Entry(e.attr, entry_timeout=self.t, attr_timeout=self.t)


def listing(m: str) -> None:
    os.listdir(os.path.join(m, "d"))


def files(m: str) -> None:
    for _ in range(10):
        with open(os.path.join(m, "f"), "rb") as f:
            f.read()


def links(m: str) -> None:
    for _ in range(10):
        os.readlink(os.path.join(m, "ln"))


def stats(m: str) -> None:
    for _ in range(100):
        os.stat(os.path.join(m, "f"))


def missing(m: str) -> None:
    for _ in range(100):
        try:
            os.stat(os.path.join(m, "nope"))
        except OSError:
            pass


CASES: list[tuple[str, Callable[[], ll.Operations], Callable[[str], None], dict[str, Any]]] = [
    ("os.listdir of 10,000 names: opendir plain", PlainListing, listing, {}),
    ("the same: opendir -> FileInfo(cache_readdir, keep_cache)", CachedListing, listing, {}),
    ("the same: no opendir, Config(no_open=True): no OPENDIR at all", Tree, listing,
     {"no_open": True}),
    ("10 x open, read, close of a file", Tree, files, {}),
    ("the same: no open(), Config(no_open=True): no OPEN at all", Tree, files,
     {"no_open": True}),
    ("10 x readlink", Tree, links, {}),
    ("the same: Config(cache_symlinks=True)", Tree, links, {"cache_symlinks": True}),
    ("100 x stat of a file: timeouts 0", lambda: Timeouts(0), stats,
     {"entry_timeout": 0, "attr_timeout": 0}),
    ("the same: timeouts 60", lambda: Timeouts(60), stats,
     {"entry_timeout": 60, "attr_timeout": 60}),
    ("100 x stat of a missing name: negative_timeout 0", Tree, missing, {}),
    ("the same: negative_timeout 60", Tree, missing, {"negative_timeout": 60}),
]


def main(argv: list[str]) -> int:
    mnt = argv[0] if argv else tempfile.mkdtemp(prefix="pyfuse-caches-")
    counter = Counter()
    log = logging.getLogger("pyfuse")
    log.addHandler(counter)
    log.setLevel(logging.DEBUG)
    log.propagate = False
    for label, make, work, config in CASES:
        with ll.mount(make(), mnt, debug=True, config=pyfuse.Config(**config)):
            work(mnt)
            counter.ops = {}
            start = time.perf_counter()
            work(mnt)
            took = time.perf_counter() - start
        sent = dict(sorted(counter.ops.items()))
        print(f"{label:60s} {sum(sent.values()):5d} requests {took * 1e3:7.2f} ms  {sent}")
    if not argv:
        os.rmdir(mnt)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
