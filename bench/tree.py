"""The synthetic benchmark tree served by pyfuse: the same tree and logic as bench/cref.c.

    python bench/tree.py MOUNTPOINT [--single] [--nocache] [--big N] [--small N]

/small holds 8 files, /big 65,536 (f00000...); every file is 0644 and 1 byte long. readdir hands
out attributes with the names (readdirplus), like the C reference.
"""
from __future__ import annotations

import argparse
import errno
import stat

import pyfuse
from pyfuse import Attr, DirEntry, FuseError

DIR = Attr(mode=stat.S_IFDIR | 0o755, nlink=2)
FILE = Attr(mode=stat.S_IFREG | 0o644, nlink=1, size=1)


class Tree(pyfuse.Operations):
    def __init__(self, small: int = 8, big: int = 65536, prepared: bool = False) -> None:
        self.sizes = {"small": small, "big": big}
        # --prepared: the listing is built once, so a benchmark sees only the binding's cost
        self.prepared = [DirEntry(f"f{i:05d}", FILE) for i in range(big)] if prepared else None

    def getattr(self, path, fh):
        if path == "/":
            return DIR
        d, _, name = path[1:].partition("/")
        n = self.sizes.get(d)
        if n is None:
            raise FuseError(errno.ENOENT)
        if not name:
            return DIR
        if name[0] != "f" or not name[1:].isdigit() or int(name[1:]) >= n:
            raise FuseError(errno.ENOENT)
        return FILE

    def readdir(self, path, offset, fh, plus):
        if path == "/":
            return [".", "..", DirEntry("small", DIR), DirEntry("big", DIR)]
        n = self.sizes.get(path[1:])
        if n is None:
            raise FuseError(errno.ENOENT)
        if self.prepared is not None and path == "/big":
            return self.prepared
        return self._entries(n)

    @staticmethod
    def _entries(n):
        for i in range(n):
            yield (f"f{i:05d}", FILE)  # a plain tuple: the cheapest entry to build

    def open(self, path, flags):
        return 0

    def read(self, path, size, offset, fh):
        return b"x"[offset:offset + size]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mountpoint")
    p.add_argument("--single", action="store_true")
    p.add_argument("--nocache", action="store_true")
    p.add_argument("--big", type=int, default=65536)
    p.add_argument("--small", type=int, default=8)
    p.add_argument("--prepared", action="store_true")
    a = p.parse_args()
    cfg = pyfuse.Config(entry_timeout=0, attr_timeout=0, negative_timeout=0) if a.nocache \
        else pyfuse.Config()
    pyfuse.run(Tree(a.small, a.big, a.prepared), a.mountpoint, threads=not a.single, config=cfg,
               fsname="pyfuse-tree")


if __name__ == "__main__":
    main()
