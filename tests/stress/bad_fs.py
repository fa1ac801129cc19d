"""A daemon whose handlers return every kind of wrong value, for the leak test.

    python tests/stress/bad_fs.py MOUNTPOINT

/wN: getattr returns wrong value N; /f: read returns wrong value (by offset), write a wrong
count; /d: readdir yields wrong entries (by call). Every request fails with EIO and a log line.
"""
from __future__ import annotations

import errno
import logging
import sys
from itertools import count

import pyfuse
from pyfuse import Attr, DirEntry, FuseError


def _wide_nlink() -> Attr:
    a = Attr(mode=0o100644)
    a.nlink = 2**40  # set after construction: stored (64 bits), refused by the shim (32)
    return a


WRONG = [None, "attr", 42, b"x", [1, 2], Attr(mode=0o644), Attr(mode=0o100644, size=-1),
         object(), {"st_mode": 1}, _wide_nlink()]
BAD_READS = [None, 42, "str", [b"x"], object(), b"x" * (1 << 20)]
BAD_WRITES = [None, -1, "3", 10**9, 1.5]
BAD_LISTINGS = [[42], [None], ["a", "a"], ["x" * 300], ["a\0b"], [("a", "notattr")],
                [DirEntry("a", Attr(mode=0o644))], [("a", None, -1)]]


class Bad(pyfuse.Operations):
    def __init__(self) -> None:
        self.calls = count()

    def getattr(self, path, fh):
        if path in ("/", "/d"):
            return Attr(mode=0o40755, nlink=2)
        if path == "/f":
            return Attr(mode=0o100644, size=1 << 20)
        if path.startswith("/w") and path[2:].isdigit():
            return WRONG[int(path[2:]) % len(WRONG)]
        raise FuseError(errno.ENOENT)

    def open(self, path, flags):
        return pyfuse.FileInfo(1, direct_io=True)

    def read(self, path, size, offset, fh):
        return BAD_READS[next(self.calls) % len(BAD_READS)]

    def write(self, path, data, offset, fh):
        return BAD_WRITES[next(self.calls) % len(BAD_WRITES)]

    def readdir(self, path, offset, fh, plus):
        return BAD_LISTINGS[next(self.calls) % len(BAD_LISTINGS)]


if __name__ == "__main__":
    logging.disable(logging.CRITICAL)  # tens of thousands of expected errors: not the point
    pyfuse.run(Bad(), sys.argv[1])
