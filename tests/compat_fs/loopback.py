"""fusepy's loopback example (examples/loopback.py): every operation reaches the filesystem
through its own __call__, which prefixes the source directory. Usage: loopback.py SOURCE MNT"""
from __future__ import annotations

import os
import sys
from errno import EACCES
from threading import Lock

from _pick import fuse


class Loopback(fuse.LoggingMixIn, fuse.Operations):
    use_ns = True

    def __init__(self, root):
        self.root = os.path.realpath(root)
        self.rwlock = Lock()

    def __call__(self, op, path, *args):
        return super().__call__(op, self.root + path, *args)

    def access(self, path, mode):
        if not os.access(path, mode):
            raise fuse.FuseOSError(EACCES)

    chmod = os.chmod
    chown = os.chown

    def create(self, path, mode, fi=None):
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)

    def flush(self, path, fh):
        return os.fsync(fh)

    def fsync(self, path, datasync, fh):
        return os.fdatasync(fh) if datasync != 0 else os.fsync(fh)

    def getattr(self, path, fh=None):
        st = os.lstat(path)
        return {key: getattr(st, key) for key in (
            "st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_atime", "st_mtime",
            "st_ctime")} | {"st_atime": st.st_atime_ns, "st_mtime": st.st_mtime_ns,
                            "st_ctime": st.st_ctime_ns}

    getxattr = None

    def link(self, target, source):
        return os.link(self.root + source, target)

    listxattr = None
    mkdir = os.mkdir
    mknod = os.mknod
    open = os.open

    def read(self, path, size, offset, fh):
        with self.rwlock:
            os.lseek(fh, offset, 0)
            return os.read(fh, size)

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(path)

    readlink = os.readlink

    def release(self, path, fh):
        return os.close(fh)

    def rename(self, old, new):
        return os.rename(old, self.root + new)

    rmdir = os.rmdir

    def statfs(self, path):
        stv = os.statvfs(path)
        return {key: getattr(stv, key) for key in (
            "f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files",
            "f_flag", "f_frsize", "f_namemax")}

    def symlink(self, target, source):
        return os.symlink(source, target)

    def truncate(self, path, length, fh=None):
        with open(path, "r+") as f:
            f.truncate(length)

    unlink = os.unlink

    def utimens(self, path, times=None):
        return os.utime(path, ns=times)

    def write(self, path, data, offset, fh):
        with self.rwlock:
            os.lseek(fh, offset, 0)
            return os.write(fh, data)


if __name__ == "__main__":
    fuse.FUSE(Loopback(sys.argv[1]), sys.argv[2], foreground=True, attr_timeout=0,
              entry_timeout=0)
