"""The synthetic benchmark tree (bench/model.py) served by pyfuse, with the logic of bench/cref.c.

    python bench/tree.py MOUNTPOINT [--single] [--nocache] [--longcache] [--tuned]
        [--prepared] [--stats] [--clone-fd] [--sticky]

Written as docs/operations.md and docs/readdir.md teach: getattr returns a prebuilt ``Attr``
(one per kind of node: the path API needs no inode numbers), readdir is a generator of
``(name, attr)``, handing out attributes with the names (readdirplus), like the C
reference. --tuned (the labelled extra): readdir yields plain ``(name, attr)`` tuples, the
cheapest entries to build. --prepared: /big's listing is built once, so that W3 shows the
binding's own per-entry cost. --longcache: timeouts of an hour (bench/callgrind.py). --clone-fd:
a /dev/fuse descriptor per worker on libfuse's multi-threaded loop (the default loop).
--sticky: pyfuse's own multi-threaded loop (sticky=True).
"""
from __future__ import annotations

import argparse
import errno
import logging
import os
import sys

# The checkout, for the bench package; last, so that an installed pyfuse (an sdist's test run)
# is the one imported.
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pyfuse  # noqa: E402
from bench import model  # noqa: E402
from pyfuse import Attr, FuseError  # noqa: E402

ATTRS = {model.DIR: Attr(mode=model.DIR, nlink=2), model.FILE: Attr(mode=model.FILE, nlink=1,
                                                                    size=1)}
ROOT = [".", "..", *((name, ATTRS[model.DIR]) for name in model.TOP)]


class Tree(pyfuse.Operations):
    def __init__(self, prepared: bool = False, tuned: bool = False) -> None:
        fmt, n, mode = model.listing("/big")  # type: ignore[misc]
        self.prepared = [(fmt % i, ATTRS[mode]) for i in range(n)] if prepared else None
        self.tuned = tuned

    def getattr(self, path, fh):
        mode = model.kind(path)
        if mode is None:
            raise FuseError(errno.ENOENT)
        return ATTRS[mode]

    def readdir(self, path, offset, fh, plus):
        if path == "/":
            return ROOT
        if self.prepared is not None and path == "/big":
            return self.prepared
        found = model.listing(path)
        if found is None:
            raise FuseError(errno.ENOTDIR)
        fmt, n, mode = found
        attr = ATTRS[mode]
        if self.tuned:
            return ((fmt % i, attr) for i in range(n))  # plain tuples: the cheapest entries
        return self._entries(fmt, n, attr)

    def _entries(self, fmt, n, attr):
        for i in range(n):
            yield fmt % i, attr

    def open(self, path, flags):
        return 0

    def read(self, path, size, offset, fh):
        return b"x"[offset:offset + size]


def _cached_opendir(self: Tree, path: str) -> pyfuse.FileInfo:
    """--dircache: the kernel keeps what it lists (docs/caching.md)."""
    return pyfuse.FileInfo(0, keep_cache=True, cache_readdir=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mountpoint")
    p.add_argument("--single", action="store_true")
    p.add_argument("--nocache", action="store_true")
    p.add_argument("--longcache", action="store_true")
    p.add_argument("--tuned", action="store_true", help="(name, attr) tuples, the labelled extra")
    p.add_argument("--prepared", action="store_true")
    p.add_argument("--stats", action="store_true", help="serve with stats=True (its overhead)")
    p.add_argument("--clone-fd", action="store_true", help="clone_fd=True")
    p.add_argument("--sticky", action="store_true", help="pyfuse's own loop (sticky=True)")
    p.add_argument("--debug", action="store_true", help="libfuse's request trace, on stderr")
    p.add_argument("--dircache", action="store_true",
                   help="opendir returns FileInfo(cache_readdir, keep_cache)")
    a = p.parse_args()
    if a.dircache:
        Tree.opendir = _cached_opendir  # type: ignore[method-assign]
    cfg = pyfuse.Config(entry_timeout=0, attr_timeout=0, negative_timeout=0) if a.nocache \
        else pyfuse.Config(entry_timeout=3600, attr_timeout=3600) if a.longcache \
        else pyfuse.Config()
    if a.debug:
        logging.basicConfig(level=logging.DEBUG)
    pyfuse.run(Tree(a.prepared, a.tuned), a.mountpoint, threads=not a.single, config=cfg,
               fsname="pyfuse-tree", stats=a.stats, clone_fd=a.clone_fd,
               sticky=a.sticky, debug=a.debug)


if __name__ == "__main__":
    main()
