"""An empty filesystem of one API mounted with libfuse's request trace on, for tests that
read what the INIT reply asked the kernel for (its "   flags=0x..." line): the same program
on the original and through ``python -m pyfuse.compat``. Usage: initflags.py API MOUNTPOINT,
API one of fusepy, mfusepy, pyfuse3, llfuse. Logging goes to stderr at DEBUG (pyfuse routes
libfuse's trace through its logger; the originals' libfuse prints it there itself)."""
from __future__ import annotations

import errno
import importlib
import logging
import stat
import sys

logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
api, mnt = sys.argv[1], sys.argv[2]

if api in ("fusepy", "mfusepy"):
    fuse = importlib.import_module("fuse" if api == "fusepy" else "mfusepy")

    class Fs(fuse.Operations):
        def getattr(self, path, fh=None):
            if path != "/":
                raise fuse.FuseOSError(errno.ENOENT)
            return {"st_mode": stat.S_IFDIR | 0o755, "st_nlink": 2}

    fuse.FUSE(Fs(), mnt, foreground=True, debug=True)
elif api == "pyfuse3":
    import pyfuse3
    import trio

    class P3(pyfuse3.Operations):
        async def getattr(self, inode, ctx=None):
            a = pyfuse3.EntryAttributes()
            a.st_ino, a.st_mode, a.st_nlink = inode, stat.S_IFDIR | 0o755, 2
            return a

    pyfuse3.init(P3(), mnt, set(pyfuse3.default_options) | {"debug", "fsname=initflags"})
    try:
        trio.run(pyfuse3.main)
    finally:
        pyfuse3.close()
elif api == "llfuse":
    import llfuse

    class LL(llfuse.Operations):
        def getattr(self, inode, ctx=None):
            a = llfuse.EntryAttributes()
            a.st_ino, a.st_mode, a.st_nlink = inode, stat.S_IFDIR | 0o755, 2
            return a

    llfuse.init(LL(), mnt, set(llfuse.default_options) | {"debug", "fsname=initflags"})
    try:
        llfuse.main(workers=1)
    finally:
        llfuse.close()
else:
    raise SystemExit(f"initflags.py: unknown API {api!r}")
