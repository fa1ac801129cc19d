"""The async suite's filesystem on pyfuse3 (trio): the latency example's files (16 files of
1 MiB, direct_io), every read awaiting trio.sleep(--delay). pyfuse3.main runs up to 512 worker
tasks (its default, 99, would cap the reads in flight below the suite's 256).

    python -m bench.peers.pyfuse3_latency MOUNTPOINT [--delay 0.01]
"""
from __future__ import annotations

import argparse
import errno
import stat
import sys

import pyfuse3
import trio

SIZE, FILES = 1 << 20, 16


def _attr(ino: int) -> pyfuse3.EntryAttributes:
    a = pyfuse3.EntryAttributes()
    a.st_ino = ino
    if ino == pyfuse3.ROOT_INODE:
        a.st_mode, a.st_nlink = stat.S_IFDIR | 0o755, 2
    else:
        a.st_mode, a.st_nlink, a.st_size = stat.S_IFREG | 0o444, 1, SIZE
    a.entry_timeout = a.attr_timeout = 1.0
    return a


class Latency(pyfuse3.Operations):
    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    async def lookup(self, parent, name, ctx=None):
        if parent == pyfuse3.ROOT_INODE and name.startswith(b"file"):
            i = int(name[4:])
            if 0 <= i < FILES:
                return _attr(pyfuse3.ROOT_INODE + 1 + i)
        raise pyfuse3.FUSEError(errno.ENOENT)

    async def getattr(self, inode, ctx=None):
        if inode > pyfuse3.ROOT_INODE + FILES:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return _attr(inode)

    async def open(self, inode, flags, ctx):
        return pyfuse3.FileInfo(fh=inode, direct_io=True)

    async def read(self, fh, off, size):
        await trio.sleep(self.delay)
        return b"x" * max(0, min(size, SIZE - off))

    async def opendir(self, inode, ctx):
        return inode

    async def readdir(self, fh, start_id, token):
        for i in range(start_id, FILES):
            if not pyfuse3.readdir_reply(token, f"file{i}".encode(),
                                         _attr(pyfuse3.ROOT_INODE + 1 + i), i + 1):
                return


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mountpoint")
    p.add_argument("--delay", type=float, default=0.01)
    a = p.parse_args(argv)
    opts = set(pyfuse3.default_options)
    opts.add("fsname=pyfuse3-latency")
    pyfuse3.init(Latency(a.delay), a.mountpoint, opts)
    try:
        trio.run(pyfuse3.main, 1, 512)
    finally:
        pyfuse3.close()


if __name__ == "__main__":
    main(sys.argv[1:])
