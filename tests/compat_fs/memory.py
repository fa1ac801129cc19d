"""fusepy's in-memory filesystem example (examples/memory.py), written against fusepy's API
with its signatures (``create(path, mode)``, ``readdir(path, fh)``), with LoggingMixIn and
use_ns. Usage: memory.py [--plain] MOUNTPOINT (--plain: the same class without LoggingMixIn)"""
from __future__ import annotations

import logging
import sys
import time
from collections import defaultdict
from errno import ENODATA, ENOENT, ENOTEMPTY
from stat import S_IFDIR, S_IFLNK, S_IFREG

from _pick import fuse


class _Memory:
    use_ns = True

    def __init__(self):
        self.files = {}
        self.data = defaultdict(bytes)
        self.fd = 0
        now = time.time_ns()
        self.files["/"] = dict(st_mode=(S_IFDIR | 0o755), st_ctime=now, st_mtime=now,
                               st_atime=now, st_nlink=2)

    def chmod(self, path, mode):
        self.files[path]["st_mode"] &= 0o770000
        self.files[path]["st_mode"] |= mode
        return 0

    def chown(self, path, uid, gid):
        self.files[path]["st_uid"] = uid
        self.files[path]["st_gid"] = gid

    def create(self, path, mode):
        now = time.time_ns()
        self.files[path] = dict(st_mode=(S_IFREG | mode), st_nlink=1, st_size=0,
                                st_ctime=now, st_mtime=now, st_atime=now)
        self.fd += 1
        return self.fd

    def getattr(self, path, fh=None):
        if path not in self.files:
            raise fuse.FuseOSError(ENOENT)
        return self.files[path]

    def getxattr(self, path, name, position=0):
        attrs = self.files[path].get("attrs", {})
        try:
            return attrs[name]
        except KeyError:
            raise fuse.FuseOSError(ENODATA) from None

    def listxattr(self, path):
        return self.files[path].get("attrs", {}).keys()

    def mkdir(self, path, mode):
        now = time.time_ns()
        self.files[path] = dict(st_mode=(S_IFDIR | mode), st_nlink=2, st_size=0,
                                st_ctime=now, st_mtime=now, st_atime=now)
        self.files["/"]["st_nlink"] += 1

    def open(self, path, flags):
        self.fd += 1
        return self.fd

    def read(self, path, size, offset, fh):
        return self.data[path][offset:offset + size]

    def readdir(self, path, fh):
        prefix = path.rstrip("/") + "/"
        return [".", ".."] + [x[len(prefix):] for x in self.files
                              if x != "/" and x.startswith(prefix) and "/" not in x[len(prefix):]]

    def readlink(self, path):
        return self.data[path].decode()

    def removexattr(self, path, name):
        attrs = self.files[path].get("attrs", {})
        try:
            del attrs[name]
        except KeyError:
            raise fuse.FuseOSError(ENODATA) from None

    def rename(self, old, new):
        for key in [k for k in self.files if k == old or k.startswith(old + "/")]:
            self.files[new + key[len(old):]] = self.files.pop(key)
            if key in self.data:
                self.data[new + key[len(old):]] = self.data.pop(key)

    def rmdir(self, path):
        if any(k.startswith(path + "/") for k in self.files):
            raise fuse.FuseOSError(ENOTEMPTY)
        self.files.pop(path)
        self.files["/"]["st_nlink"] -= 1

    def setxattr(self, path, name, value, options, position=0):
        attrs = self.files[path].setdefault("attrs", {})
        attrs[name] = value

    def statfs(self, path):
        return dict(f_bsize=512, f_blocks=4096, f_bavail=2048)

    def symlink(self, target, source):
        self.files[target] = dict(st_mode=(S_IFLNK | 0o777), st_nlink=1, st_size=len(source))
        self.data[target] = source.encode()

    def truncate(self, path, length, fh=None):
        self.data[path] = self.data[path][:length].ljust(length, b"\0")
        self.files[path]["st_size"] = length

    def unlink(self, path):
        self.data.pop(path, None)
        self.files.pop(path)

    def utimens(self, path, times=None):
        now = time.time_ns()
        atime, mtime = times if times else (now, now)
        self.files[path]["st_atime"] = atime
        self.files[path]["st_mtime"] = mtime

    def write(self, path, data, offset, fh):
        self.data[path] = (self.data[path][:offset].ljust(offset, b"\0") + data
                           + self.data[path][offset + len(data):])
        self.files[path]["st_size"] = len(self.data[path])
        return len(data)


class Memory(fuse.LoggingMixIn, _Memory, fuse.Operations):
    pass


class PlainMemory(_Memory, fuse.Operations):
    pass


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    cls = PlainMemory if sys.argv[1] == "--plain" else Memory
    fuse.FUSE(cls(), sys.argv[-1], foreground=True, attr_timeout=0, entry_timeout=0)
