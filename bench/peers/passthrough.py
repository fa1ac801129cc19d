"""Passthrough filesystems on the peers, for the data benchmarks: just what the workloads use
(lookup, getattr, setattr of the size, create, open, read, write, flush, release, statfs), each
forwarding to files under SOURCE with os.pread/os.pwrite, as their own examples do.

    python -m bench.peers.passthrough {mfusepy,llfuse,pyfuse3} SOURCE MOUNTPOINT
"""
from __future__ import annotations

import argparse
import errno
import os
import sys
from typing import Any


class Inodes:
    """The low-level peers' part: inode numbers (the source's st_ino) to paths."""

    def __init__(self, source: str, attrs_cls: type) -> None:
        self.paths = {1: source}
        self.cls = attrs_cls

    def attr(self, path: str) -> Any:
        st = os.lstat(path)
        a = self.cls()
        for name in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_blksize",
                     "st_blocks", "st_atime_ns", "st_mtime_ns", "st_ctime_ns"):
            setattr(a, name, getattr(st, name))
        a.st_ino = 1 if path == self.paths[1] else st.st_ino
        a.attr_timeout = a.entry_timeout = 0
        return a

    def lookup(self, parent: int, name: bytes) -> Any:
        path = os.path.join(self.paths[parent], os.fsdecode(name))
        a = self.attr(path)
        self.paths[a.st_ino] = path
        return a

    def setattr(self, ino: int, size: int | None) -> Any:
        if size is not None:
            os.truncate(self.paths[ino], size)
        return self.attr(self.paths[ino])

    def create(self, parent: int, name: bytes, mode: int, flags: int) -> tuple[int, Any]:
        path = os.path.join(self.paths[parent], os.fsdecode(name))
        fd = os.open(path, flags | os.O_CREAT, mode)
        a = self.attr(path)
        self.paths[a.st_ino] = path
        return fd, a

    def open(self, ino: int, flags: int) -> int:
        return os.open(self.paths[ino], flags & ~os.O_CREAT)


def llfuse_main(args: argparse.Namespace) -> None:
    import llfuse

    class Pass(llfuse.Operations):
        def __init__(self) -> None:
            super().__init__()
            self.t = Inodes(os.path.realpath(args.source), llfuse.EntryAttributes)

        def lookup(self, parent, name, ctx=None):
            try:
                return self.t.lookup(parent, name)
            except OSError as e:
                raise llfuse.FUSEError(e.errno) from None

        def getattr(self, inode, ctx=None):
            return self.t.attr(self.t.paths[inode])

        def setattr(self, inode, attr, fields, fh, ctx):
            return self.t.setattr(inode, attr.st_size if fields.update_size else None)

        def create(self, parent, name, mode, flags, ctx):
            return self.t.create(parent, name, mode, flags)

        def open(self, inode, flags, ctx):
            return self.t.open(inode, flags)

        def read(self, fh, off, size):
            return os.pread(fh, size, off)

        def write(self, fh, off, buf):
            return os.pwrite(fh, buf, off)

        def flush(self, fh):
            pass

        def release(self, fh):
            os.close(fh)

    opts = ["fsname=llfuse-pass"]
    llfuse.init(Pass(), args.mountpoint, opts)
    try:
        llfuse.main(workers=None)
    finally:
        llfuse.close()


def pyfuse3_main(args: argparse.Namespace) -> None:
    import pyfuse3
    import trio

    def fi(fd: int) -> Any:
        return pyfuse3.FileInfo(fh=fd)

    class Pass(pyfuse3.Operations):
        def __init__(self) -> None:
            super().__init__()
            self.t = Inodes(os.path.realpath(args.source), pyfuse3.EntryAttributes)

        async def lookup(self, parent, name, ctx=None):
            try:
                return self.t.lookup(parent, name)
            except OSError as e:
                raise pyfuse3.FUSEError(e.errno) from None

        async def getattr(self, inode, ctx=None):
            return self.t.attr(self.t.paths[inode])

        async def setattr(self, inode, attr, fields, fh, ctx):
            return self.t.setattr(inode, attr.st_size if fields.update_size else None)

        async def create(self, parent, name, mode, flags, ctx):
            fd, a = self.t.create(parent, name, mode, flags)
            return fi(fd), a

        async def open(self, inode, flags, ctx):
            return fi(self.t.open(inode, flags))

        async def read(self, fh, off, size):
            return os.pread(fh, size, off)

        async def write(self, fh, off, buf):
            return os.pwrite(fh, buf, off)

        async def flush(self, fh):
            pass

        async def release(self, fh):
            os.close(fh)

    opts = set(pyfuse3.default_options)
    opts.add("fsname=pyfuse3-pass")
    pyfuse3.init(Pass(), args.mountpoint, opts)
    try:
        trio.run(pyfuse3.main, 1, 99)
    finally:
        pyfuse3.close()


def mfusepy_main(args: argparse.Namespace) -> None:
    os.environ.setdefault("FUSE_LIBRARY_NAME", "fuse3")
    import mfusepy as fuse

    root = os.path.realpath(args.source)

    class Pass(fuse.Operations):
        def getattr(self, path, fh=None):
            try:
                st = os.lstat(root + path)
            except OSError as e:
                raise fuse.FuseOSError(e.errno) from None
            return {k: getattr(st, k) for k in ("st_mode", "st_nlink", "st_uid", "st_gid",
                                                "st_size", "st_atime", "st_mtime", "st_ctime")}

        def truncate(self, path, length, fh=None):
            os.truncate(root + path, length)

        def create(self, path, mode, fi=None):
            return os.open(root + path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)

        def open(self, path, flags):
            return os.open(root + path, flags)

        def read(self, path, size, offset, fh):
            return os.pread(fh, size, offset)

        def write(self, path, data, offset, fh):
            return os.pwrite(fh, data, offset)

        def flush(self, path, fh):
            return 0

        def release(self, path, fh):
            os.close(fh)
            return 0

    fuse.FUSE(Pass(), args.mountpoint, foreground=True, fsname="mfusepy-pass")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("peer", choices=["mfusepy", "llfuse", "pyfuse3"])
    p.add_argument("source")
    p.add_argument("mountpoint")
    args = p.parse_args(argv)
    {"mfusepy": mfusepy_main, "llfuse": llfuse_main, "pyfuse3": pyfuse3_main}[args.peer](args)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except KeyboardInterrupt:
        sys.exit(errno.EINTR)
