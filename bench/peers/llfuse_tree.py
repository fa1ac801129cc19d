"""The tree on llfuse (libfuse 2, low-level API, Cython)."""
from __future__ import annotations

import errno
import sys

import llfuse

from . import BASE, DIR_MODE, DIRS, FILE_MODE, SIZES, child, entry_attr, inode_mode, parse


def _attr(ino: int, mode: int, timeout: float):  # noqa: ANN202
    return entry_attr(llfuse.EntryAttributes, ino, mode, timeout)


class Tree(llfuse.Operations):
    def __init__(self, timeout: float) -> None:
        super().__init__()
        self.t = timeout

    def getattr(self, inode, ctx=None):
        mode = inode_mode(inode)
        if mode is None:
            raise llfuse.FUSEError(errno.ENOENT)
        return _attr(inode, mode, self.t)

    def lookup(self, parent, name, ctx=None):
        found = child(parent, name.decode())
        if found is None:
            raise llfuse.FUSEError(errno.ENOENT)
        return _attr(*found, self.t)

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
