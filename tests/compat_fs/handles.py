"""One fusepy filesystem whose open gives file handles of all 64 bits (libfuse's fh is a
uint64_t): /hK's handle is HANDLES[K], and reading a file gives back the handle the read was
given; writes are logged with theirs (/log shows them).
Usage: handles.py MOUNTPOINT"""
from __future__ import annotations

import errno
import stat
import sys

from _pick import fuse

#: 2**63 | 3 would name file descriptor 3 if a binding took bit 63 for its own
HANDLES = [0, 7, 2**63 - 1, 2**63, 2**63 | 3, 2**64 - 1]
FILE = {"st_mode": stat.S_IFREG | 0o644, "st_nlink": 1, "st_size": 64}


class Handles(fuse.Operations):
    def __init__(self):
        self.log = []

    def getattr(self, path, fh=None):
        if path == "/":
            return {"st_mode": stat.S_IFDIR | 0o755, "st_nlink": 2}
        if path == "/log" or path[:2] == "/h" and path[2:].isdigit() and \
                int(path[2:]) < len(HANDLES):
            return dict(FILE, st_size=4096) if path == "/log" else dict(FILE)
        raise fuse.FuseOSError(errno.ENOENT)

    def readdir(self, path, fh):
        return [".", "..", "log"] + [f"h{k}" for k in range(len(HANDLES))]

    def open(self, path, flags):
        return 0 if path == "/log" else HANDLES[int(path[2:])]

    def read(self, path, size, offset, fh):
        text = "".join(self.log) if path == "/log" else f"{path} fh={fh}\n"
        return text.encode()[offset:offset + size]

    def write(self, path, data, offset, fh):
        self.log.append(f"write {path} fh={fh} {bytes(data)!r}\n")
        return len(data)

    def truncate(self, path, length, fh=None):
        return 0


if __name__ == "__main__":
    fuse.FUSE(Handles(), sys.argv[1], foreground=True, nothreads=True, direct_io=True)
