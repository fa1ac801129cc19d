"""The tree on llfuse (libfuse 2, low-level API, Cython)."""
from __future__ import annotations

import errno
import sys

import llfuse

from . import DIR_MODE, FILE_MODE, SIZES, entry_attr, lookup_file, parse

DIRS = {2: "small", 3: "big"}
BASE = {"small": 1_000, "big": 1_000_000}


def _attr(ino: int, mode: int, timeout: float):  # noqa: ANN202
    return entry_attr(llfuse.EntryAttributes, ino, mode, timeout)


class Tree(llfuse.Operations):
    def __init__(self, timeout: float) -> None:
        super().__init__()
        self.t = timeout

    def _dir_of(self, ino):
        for name, base in BASE.items():
            if base <= ino < base + SIZES[name]:
                return name
        return None

    def getattr(self, inode, ctx=None):
        if inode == llfuse.ROOT_INODE or inode in DIRS:
            return _attr(inode, DIR_MODE, self.t)
        if self._dir_of(inode) is None:
            raise llfuse.FUSEError(errno.ENOENT)
        return _attr(inode, FILE_MODE, self.t)

    def lookup(self, parent, name, ctx=None):
        name = name.decode()
        if parent == llfuse.ROOT_INODE:
            for ino, d in DIRS.items():
                if d == name:
                    return _attr(ino, DIR_MODE, self.t)
            raise llfuse.FUSEError(errno.ENOENT)
        d = DIRS.get(parent)
        i = lookup_file(d, name) if d else None
        if i is None:
            raise llfuse.FUSEError(errno.ENOENT)
        return _attr(BASE[d] + i, FILE_MODE, self.t)

    def opendir(self, inode, ctx):
        return inode

    def readdir(self, fh, off):
        if fh == llfuse.ROOT_INODE:
            for k, (ino, d) in enumerate(DIRS.items()):
                if k >= off:
                    yield (d.encode(), _attr(ino, DIR_MODE, self.t), k + 1)
            return
        d = DIRS[fh]
        for i in range(off, SIZES[d]):
            yield (f"f{i:05d}".encode(), _attr(BASE[d] + i, FILE_MODE, self.t), i + 1)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    llfuse.init(Tree(0.0 if args.nocache else 1.0), args.mountpoint, ["fsname=llfuse-tree"])
    try:
        llfuse.main(workers=1 if args.single else None)
    finally:
        llfuse.close()


if __name__ == "__main__":
    main(sys.argv[1:])
