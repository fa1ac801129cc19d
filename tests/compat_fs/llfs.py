"""A small filesystem written against llfuse's API (synchronous handlers, bytes names, the
global lock): files under the root whose reads release the lock while they wait. Usage:
llfs.py MOUNTPOINT. LLFUSE_MODULE names the module (default llfuse). Each read records, in
the file "report", whether the lock was held when the handler ran and how many reads ran at
once with the lock released, and the pid and uid of the ctx the last open kept (read after
that open's reply). Looking up "float-times", "bad-timeout", "nan-timeout", "big-uid" and
"none" returns what their names say (the tests check how each is replied)."""
from __future__ import annotations

import errno
import importlib
import os
import stat
import sys
import threading
import time

llfuse = importlib.import_module(os.environ.get("LLFUSE_MODULE", "llfuse"))


class LLFs(llfuse.Operations):
    def __init__(self):
        super().__init__()
        self.files = {b"a": b"alpha\n", b"b": bytes(range(256)) * 8192}  # b: 2 MiB
        self.inos = {name: llfuse.ROOT_INODE + 1 + i for i, name in enumerate(sorted(self.files))}
        self.names = {ino: name for name, ino in self.inos.items()}
        self.held = []
        self.running = 0
        self.most = 0
        self.count_lock = threading.Lock()
        self.last_ctx = None

    def _attr(self, ino):
        a = llfuse.EntryAttributes()
        a.st_ino = ino
        if ino == llfuse.ROOT_INODE:
            a.st_mode, a.st_nlink = stat.S_IFDIR | 0o755, 2
        elif ino in self.names:
            a.st_mode, a.st_size = stat.S_IFREG | 0o644, len(self.files[self.names[ino]])
        elif ino == 99:
            a.st_mode, a.st_size = stat.S_IFREG | 0o444, len(self._report())
        else:
            raise llfuse.FUSEError(errno.ENOENT)
        a.entry_timeout = a.attr_timeout = 0
        return a

    def _report(self):
        c = self.last_ctx
        ids = f"{c.pid} {c.uid}" if c is not None else "- -"
        return f"{all(self.held)} {len(self.held)} {self.most} {ids}\n".encode()

    def _odd(self, name):
        if name == b"none":
            return None
        a = self._attr(llfuse.ROOT_INODE + 1)
        a.st_ino = 98
        if name == b"float-times":
            a.st_mtime_ns = 1.5e18
            a.attr_timeout = 60  # stat uses these (no getattr of inode 98)
        elif name == b"nan-timeout":
            a.attr_timeout = float("nan")
        elif name == b"big-uid":
            a.st_uid = 1 << 40
        else:
            a.entry_timeout = -1
        return a

    def lookup(self, parent_inode, name, ctx):
        if name in (b"float-times", b"bad-timeout", b"nan-timeout", b"big-uid", b"none"):
            return self._odd(name)
        if name == b"report":
            return self._attr(99)
        if name not in self.inos:
            raise llfuse.FUSEError(errno.ENOENT)
        return self._attr(self.inos[name])

    def getattr(self, inode, ctx):
        return self._attr(inode)

    def opendir(self, inode, ctx):
        return inode

    def readdir(self, fh, off):
        entries = sorted(self.inos.items())
        for i, (name, ino) in enumerate(entries[off:], off):
            yield name, self._attr(ino), i + 1

    def open(self, inode, flags, ctx):
        self.last_ctx = ctx
        if flags & os.O_ACCMODE != os.O_RDONLY:
            raise llfuse.FUSEError(errno.EROFS)
        return inode

    def read(self, fh, off, size):
        if fh == 99:
            return self._report()[off:off + size]
        try:
            llfuse.lock.acquire(timeout=0)
        except RuntimeError:  # "cannot be acquired more than once": this handler holds it
            self.held.append(True)
        else:
            self.held.append(False)
            llfuse.lock.release()
        with llfuse.lock_released:
            with self.count_lock:
                self.running += 1
                self.most = max(self.most, self.running)
            time.sleep(0.2)
            with self.count_lock:
                self.running -= 1
        return self.files[self.names[fh]][off:off + size]

    def release(self, fh):
        pass


if __name__ == "__main__":
    llfuse.init(LLFs(), sys.argv[1], {"fsname=llfs"})
    try:
        llfuse.main(workers=4)
    except BaseException:
        llfuse.close(unmount=False)
        raise
    llfuse.close()
