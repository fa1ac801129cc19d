"""A directory of 300 names whose getattr counts where it is called from: inside a listing
(pyfuse.compat's readdirplus, which asks getattr for each name of a READDIRPLUS request) or
for a kernel LOOKUP afterwards. /counts shows the counts.
Usage: plus.py [--no-getattr] [--nocache] MNT"""
from __future__ import annotations

import errno
import json
import stat
import sys

from _pick import fuse

NAMES = [f"f{i:03d}" for i in range(300)]


class Plus(fuse.Operations):
    def __init__(self):
        self.counts = {"listing": 0, "lookup": 0}

    def getattr(self, path, fh=None):
        if path == "/":
            return {"st_mode": stat.S_IFDIR | 0o755, "st_nlink": 2}
        if path == "/counts":
            return {"st_mode": stat.S_IFREG | 0o444, "st_nlink": 1, "st_size": 100}
        if path[1:] not in NAMES:
            raise fuse.FuseOSError(errno.ENOENT)
        caller = sys._getframe(1).f_code.co_name
        self.counts["listing" if caller == "_entries" else "lookup"] += 1
        return {"st_mode": stat.S_IFREG | 0o644, "st_nlink": 1, "st_size": 5}

    def readdir(self, path, fh):
        return [".", ".."] + NAMES

    def read(self, path, size, offset, fh):
        return json.dumps(self.counts).encode().ljust(100)[offset:offset + size]


if __name__ == "__main__":
    kw = {"readdir_getattr": False} if "--no-getattr" in sys.argv else {}
    if "--nocache" in sys.argv:
        kw.update(entry_timeout=0, attr_timeout=0)
    fuse.FUSE(Plus(), sys.argv[-1], foreground=True, **kw)
