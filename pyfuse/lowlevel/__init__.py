"""pyfuse's inode API, on libfuse's low-level session: the filesystem owns inode numbers
(lookup/forget, real hard links), handlers may be ``async def`` (replies sent later while
other requests go on), interrupted requests are cancelled, and the kernel's caches can be
told what changed.

    import pyfuse.lowlevel as ll

    class Hello(ll.Operations):
        def lookup(self, parent, name): ...
        def getattr(self, ino, fh): ...

    ll.run(Hello(), "/mnt/x")

See docs/lowlevel.md, and :mod:`pyfuse.examples.memory_ll` and :mod:`pyfuse.examples.latency`.
"""
from ..types import Attr, Config, Context, DirEntry, FdRange, FileInfo, Lock, StatVFS
from ._serve import serve, serving
from .operations import (
    ROOT_INO,
    SET_ATIME,
    SET_CTIME,
    SET_GID,
    SET_MODE,
    SET_MTIME,
    SET_SIZE,
    SET_UID,
    Entry,
    Operations,
)
from .session import Session, lookups, mount, run

__all__ = ["Operations", "Entry", "Session", "run", "mount", "serve", "serving", "lookups",
           "ROOT_INO", "SET_MODE", "SET_UID", "SET_GID", "SET_SIZE", "SET_ATIME", "SET_MTIME",
           "SET_CTIME", "Attr", "Config", "Context", "DirEntry", "FdRange", "FileInfo", "Lock",
           "StatVFS"]
