"""A filesystem whose /slow file blocks in read and write, for the fault tests.

    python tests/faults/slow_fs.py MOUNTPOINT MARKER SECONDS

/slow: read and write touch MARKER (so the test knows the request is in the handler), then
sleep SECONDS; read then returns b"done", write the byte count. Direct I/O, so every read(2)
and write(2) reaches the handler.
"""
from __future__ import annotations

import errno
import sys
import time

import pyfuse
from pyfuse import Attr, FileInfo, FuseError


class Slow(pyfuse.Operations):
    def __init__(self, marker: str, seconds: float) -> None:
        self.marker = marker
        self.seconds = seconds

    def getattr(self, path, fh):
        if path == "/":
            return Attr(mode=0o40755, nlink=2)
        if path == "/slow":
            return Attr(mode=0o100666, size=4)
        raise FuseError(errno.ENOENT)

    def open(self, path, flags):
        return FileInfo(1, direct_io=True)

    def _block(self) -> None:
        with open(self.marker, "w"):
            pass
        time.sleep(self.seconds)

    def read(self, path, size, offset, fh):
        self._block()
        return b"done"[offset:offset + size]

    def write(self, path, data, offset, fh):
        self._block()
        return len(data)


if __name__ == "__main__":
    pyfuse.run(Slow(sys.argv[2], float(sys.argv[3])), sys.argv[1], fsname="slow")
