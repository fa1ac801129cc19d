"""One fusepy filesystem for the features around the data: raw_fi (the handler sets fi.fh,
direct_io, keep_cache and sees the same object later), fuse_get_context (a file that shows
the caller), readdir tuples with attributes, mfusepy's readdir_with_offset with offsets, and
fuse_exit (reading /exit stops the filesystem). Usage: special.py MOUNTPOINT [--daemon]"""
from __future__ import annotations

import errno
import os
import stat
import sys

from _pick import fuse

FILE = {"st_mode": stat.S_IFREG | 0o644, "st_nlink": 1, "st_size": 4096,
        "st_mtime": 1_700_000_000.5, "st_uid": 12, "st_gid": 34}
NAMES = [f"n{i:04d}" for i in range(300)]


class Special(fuse.Operations):
    def __init__(self):
        self.opened = {}
        self.opens = 0  # a count, not len(opened): the kernel sends release after close returns

    def getattr(self, path, fh=None):
        if path == "/statbug":
            raise ValueError("a bug in the filesystem's getattr")
        if path in ("/", "/tuples", "/offsets"):
            return {"st_mode": stat.S_IFDIR | 0o755, "st_nlink": 2}
        if path in ("/whoami", "/raw", "/direct", "/exit", "/bug") or \
                os.path.dirname(path) in ("/tuples", "/offsets"):
            return dict(FILE)
        raise fuse.FuseOSError(errno.ENOENT)

    def readdir(self, path, fh):
        if path == "/":
            return [".", "..", "whoami", "raw", "direct", "exit", "tuples", "offsets"]
        if path == "/tuples":  # attributes with the names: the entry type, or all of them
            return [(".", None, 0), ("..", None, 0)] + [
                (n, {"st_mode": stat.S_IFREG | 0o600, "st_nlink": 1, "st_size": 7,
                     "st_mtime": 1_600_000_000}, 0) for n in NAMES]
        raise fuse.FuseOSError(errno.ENOTDIR)

    def readdir_with_offset(self, path, offset, fh):
        if path != "/offsets":
            return self.readdir(path, fh)
        # resumes after `offset`, each entry carrying its own (1-based) offset
        return [(n, None, i + 1) for i, n in enumerate(NAMES)][offset:]

    def open(self, path, fi):
        fi.fh = 1000 + self.opens
        self.opens += 1
        fi.direct_io = path == "/direct"
        fi.keep_cache = path == "/raw"
        self.opened[fi.fh] = fi.flags
        return 0

    def read(self, path, size, offset, fi):
        if path == "/bug":
            raise ValueError("a bug in the filesystem")
        if path == "/exit":
            fuse.fuse_exit()
            return b"bye\n"
        if path == "/whoami":
            uid, gid, pid = fuse.fuse_get_context()
            data = f"{uid} {gid} {pid}\n".encode()
        else:  # what open() filled in comes back (the same fuse_file_info)
            same = self.opened.get(fi.fh) == fi.flags
            data = f"{path} fh={fi.fh} same={same} direct_io={bool(fi.direct_io)}\n".encode()
        return data[offset:offset + size]

    def release(self, path, fi):
        self.opened.pop(fi.fh, None)
        return 0


if __name__ == "__main__":
    daemon = "--daemon" in sys.argv
    fuse.FUSE(Special(), sys.argv[1], raw_fi=True, foreground=not daemon, attr_timeout=0,
              entry_timeout=0)
    if daemon:  # fusepy runs the rest in the daemon, after the unmount
        with open(sys.argv[1] + ".after", "w") as f:
            f.write("served and unmounted\n")
