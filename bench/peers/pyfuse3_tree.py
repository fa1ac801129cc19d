"""The tree on pyfuse3 (libfuse 3, low-level API, Cython, trio)."""
from __future__ import annotations

import errno
import sys

import pyfuse3
import trio

from . import BASE, DIR_MODE, DIRS, FILE_MODE, SIZES, child, entry_attr, inode_mode, parse


def _attr(ino: int, mode: int, timeout: float):  # noqa: ANN202
    return entry_attr(pyfuse3.EntryAttributes, ino, mode, timeout)


class Tree(pyfuse3.Operations):
    def __init__(self, timeout: float) -> None:
        super().__init__()
        self.t = timeout

    async def getattr(self, inode, ctx=None):
        mode = inode_mode(inode)
        if mode is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return _attr(inode, mode, self.t)

    async def lookup(self, parent, name, ctx=None):
        found = child(parent, name.decode())
        if found is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return _attr(*found, self.t)

    async def opendir(self, inode, ctx):
        return inode

    async def readdir(self, fh, start_id, token):
        if fh == pyfuse3.ROOT_INODE:
            for k, (ino, d) in enumerate(DIRS.items()):
                if k >= start_id and not pyfuse3.readdir_reply(
                        token, d.encode(), _attr(ino, DIR_MODE, self.t), k + 1):
                    return
            return
        d = DIRS[fh]
        for i in range(start_id, SIZES[d]):
            if not pyfuse3.readdir_reply(token, f"f{i:05d}".encode(),
                                         _attr(BASE[d] + i, FILE_MODE, self.t), i + 1):
                return


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    opts = set(pyfuse3.default_options)
    opts.add("fsname=pyfuse3-tree")
    pyfuse3.init(Tree(0.0 if args.nocache else 1.0), args.mountpoint, opts)
    try:
        trio.run(pyfuse3.main, 1, 1 if args.single else 99)
    finally:
        pyfuse3.close()


if __name__ == "__main__":
    main(sys.argv[1:])
