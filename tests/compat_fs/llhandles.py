"""An llfuse filesystem whose open gives file handles of all 64 bits (llfuse's fh is a
uint64_t): file K's handle is HANDLES[K], and reading it gives back the handle the read was
given. Usage: llhandles.py MOUNTPOINT (LLFUSE_MODULE names the module; default llfuse)."""
from __future__ import annotations

import errno
import importlib
import os
import stat
import sys

llfuse = importlib.import_module(os.environ.get("LLFUSE_MODULE", "llfuse"))

#: 2**63 | 3 would name file descriptor 3 if a binding took bit 63 for its own
HANDLES = [0, 7, 2**63 - 1, 2**63, 2**63 | 3, 2**64 - 1]


class Handles(llfuse.Operations):
    def _attr(self, inode):
        a = llfuse.EntryAttributes()
        a.st_ino = inode
        a.st_mode = stat.S_IFDIR | 0o755 if inode == llfuse.ROOT_INODE else stat.S_IFREG | 0o644
        a.st_nlink = 1
        a.st_size = 64
        return a

    def getattr(self, inode, ctx=None):
        return self._attr(inode)

    def lookup(self, parent, name, ctx=None):
        if parent == llfuse.ROOT_INODE and name[:1] == b"h" and name[1:].isdigit() and \
                int(name[1:]) < len(HANDLES):
            return self._attr(llfuse.ROOT_INODE + 1 + int(name[1:]))
        raise llfuse.FUSEError(errno.ENOENT)

    def open(self, inode, flags, ctx):
        return HANDLES[inode - llfuse.ROOT_INODE - 1]

    def read(self, fh, off, size):
        return (b"fh=%d\n" % fh)[off:off + size]

    def release(self, fh):
        pass


if __name__ == "__main__":
    llfuse.init(Handles(), sys.argv[1], ["fsname=llhandles"])
    try:
        llfuse.main(workers=1)
    finally:
        llfuse.close()
