"""The tree on pyfuse3 (libfuse 3, low-level API, Cython, trio)."""
from __future__ import annotations

import errno
import sys

import pyfuse3
import trio

from . import InodeTree, parse, timeout


class Tree(pyfuse3.Operations):
    def __init__(self, timeout: float, stored: bool = False) -> None:
        super().__init__()
        self.tree = InodeTree(pyfuse3.EntryAttributes, timeout, stored)

    async def getattr(self, inode, ctx=None):
        a = self.tree.attr(inode)
        if a is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return a

    async def lookup(self, parent, name, ctx=None):
        a = self.tree.lookup(parent, name)
        if a is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return a

    async def open(self, inode, flags, ctx):
        return pyfuse3.FileInfo(fh=inode)

    async def read(self, fh, off, size):
        return b"x"[off:off + size]

    async def opendir(self, inode, ctx):
        return inode

    async def readdir(self, fh, start_id, token):
        for name, attr, nxt in self.tree.entries(fh, start_id):
            if not pyfuse3.readdir_reply(token, name, attr, nxt):
                return


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.debug:  # pyfuse.compat logs libfuse's trace on the pyfuse logger
        import logging
        logging.basicConfig(level=logging.DEBUG)
    opts = set(pyfuse3.default_options)
    opts.add("fsname=pyfuse3-tree")
    if args.debug:
        opts.add("debug")
    pyfuse3.init(Tree(timeout(args), args.stored), args.mountpoint, opts)
    try:
        trio.run(pyfuse3.main, 1, 1 if args.single else 99)
    finally:
        pyfuse3.close()


if __name__ == "__main__":
    main(sys.argv[1:])
