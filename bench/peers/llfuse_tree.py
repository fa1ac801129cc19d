"""The tree on llfuse (libfuse 2, low-level API, Cython)."""
from __future__ import annotations

import errno
import sys

import llfuse

from . import InodeTree, parse, timeout


class Tree(llfuse.Operations):
    def __init__(self, timeout: float, stored: bool = False) -> None:
        super().__init__()
        self.tree = InodeTree(llfuse.EntryAttributes, timeout, stored)

    def getattr(self, inode, ctx=None):
        a = self.tree.attr(inode)
        if a is None:
            raise llfuse.FUSEError(errno.ENOENT)
        return a

    def lookup(self, parent, name, ctx=None):
        a = self.tree.lookup(parent, name)
        if a is None:
            raise llfuse.FUSEError(errno.ENOENT)
        return a

    def open(self, inode, flags, ctx):
        return inode

    def read(self, fh, off, size):
        return b"x"[off:off + size]

    def opendir(self, inode, ctx):
        return inode

    def readdir(self, fh, off):
        return self.tree.entries(fh, off)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.debug:  # pyfuse.compat logs libfuse's trace on the pyfuse logger
        import logging
        logging.basicConfig(level=logging.DEBUG)
    llfuse.init(Tree(timeout(args), args.stored), args.mountpoint,
                ["fsname=llfuse-tree", *(["debug"] if args.debug else [])])
    try:
        llfuse.main(workers=1 if args.single else None)
    finally:
        llfuse.close()


if __name__ == "__main__":
    main(sys.argv[1:])
