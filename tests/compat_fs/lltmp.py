"""A one-directory in-memory filesystem written against llfuse's API as llfuse's own
examples/tmpfs.py writes one: ``open`` ignores its flags (on llfuse, libfuse 2 truncates a
file opened with O_TRUNC through ``setattr`` first), ``setattr`` applies a size; a name that
is not ``bytes`` fails its request, as it never is on llfuse. Usage:
lltmp.py MOUNTPOINT. LLFUSE_MODULE names the module (default llfuse)."""
from __future__ import annotations

import errno
import importlib
import os
import stat
import sys
import time

llfuse = importlib.import_module(os.environ.get("LLFUSE_MODULE", "llfuse"))


def _bytes(name):
    """llfuse hands names over as bytes: anything else fails the request (EIO)."""
    if type(name) is not bytes:
        raise TypeError(f"name {name!r} is not bytes")


class LLTmp(llfuse.Operations):
    def __init__(self):
        super().__init__()
        self.names = {}  # name -> inode
        self.data = {}   # inode -> bytes
        self.modes = {}

    def _attr(self, ino):
        a = llfuse.EntryAttributes()
        a.st_ino = ino
        if ino == llfuse.ROOT_INODE:
            a.st_mode, a.st_nlink = stat.S_IFDIR | 0o755, 2
        elif ino in self.data:
            a.st_mode, a.st_size = self.modes[ino], len(self.data[ino])
        else:
            raise llfuse.FUSEError(errno.ENOENT)
        a.st_mtime_ns = a.st_ctime_ns = a.st_atime_ns = time.time_ns()
        a.entry_timeout = a.attr_timeout = 0
        return a

    def lookup(self, parent_inode, name, ctx):
        _bytes(name)
        if name not in self.names:
            raise llfuse.FUSEError(errno.ENOENT)
        return self._attr(self.names[name])

    def getattr(self, inode, ctx):
        return self._attr(inode)

    def setattr(self, inode, attr, fields, fh, ctx):
        if fields.update_size:
            d = self.data[inode]
            self.data[inode] = d[:attr.st_size].ljust(attr.st_size, b"\0")
        if fields.update_mode:
            self.modes[inode] = attr.st_mode
        return self._attr(inode)

    def create(self, parent_inode, name, mode, flags, ctx):
        _bytes(name)
        ino = llfuse.ROOT_INODE + 1 + len(self.names)
        self.names[name] = ino
        self.data[ino] = b""
        self.modes[ino] = stat.S_IFREG | (mode & 0o7777)
        return ino, self._attr(ino)

    def open(self, inode, flags, ctx):
        return inode  # flags ignored, as llfuse's examples/tmpfs.py does

    def read(self, fh, off, size):
        return self.data[fh][off:off + size]

    def write(self, fh, off, buf):
        d = self.data[fh]
        self.data[fh] = d[:off].ljust(off, b"\0") + buf + d[off + len(buf):]
        return len(buf)

    def opendir(self, inode, ctx):
        return inode

    def readdir(self, fh, off):
        for i, (name, ino) in enumerate(sorted(self.names.items())[off:], off):
            yield name, self._attr(ino), i + 1

    def release(self, fh):
        pass


if __name__ == "__main__":
    llfuse.init(LLTmp(), sys.argv[1], set(llfuse.default_options) | {"fsname=lltmp"})
    try:
        llfuse.main(workers=1)
    except BaseException:
        llfuse.close(unmount=False)
        raise
    llfuse.close()
