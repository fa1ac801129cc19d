"""llfuse filesystems on pyfuse, unchanged: ``import pyfuse.compat.llfuse as llfuse`` (the
runner, ``python -m pyfuse.compat``, makes ``import llfuse`` resolve here).

llfuse 1.5's API on :mod:`pyfuse.lowlevel`: ``init`` mounts, ``main(workers)`` serves in the
calling thread until the filesystem is unmounted (or SIGINT/SIGTERM/SIGHUP), ``close`` cleans
up. Handlers are synchronous and run on libfuse's threads holding llfuse's global lock
(:data:`lock`; :data:`lock_released` lets go of it), as llfuse's do. The value types are
pyfuse3's (the two share them). docs/compat.md lists the differences.
"""
from __future__ import annotations

import errno
import os
import time
from typing import Any, Iterable, Optional

from ... import lowlevel as ll
from ..._pyfuse_c import ffi, lib
from ...types import Config
from ..pyfuse3 import get_sup_groups, getxattr, listdir, setxattr
from ..pyfuse3._types import (
    ENOATTR,
    EntryAttributes,
    FUSEError,
    RequestContext,
    SetattrFields,
    StatvfsData,
    serve_entries,
)

__all__ = ["Operations", "EntryAttributes", "StatvfsData", "SetattrFields", "RequestContext",
           "FUSEError", "ENOATTR", "ROOT_INODE", "default_options", "init", "main", "close",
           "lock", "lock_released", "invalidate_inode", "invalidate_entry", "notify_store",
           "get_ino_t_bits", "get_off_t_bits", "get_sup_groups", "listdir", "setxattr",
           "getxattr", "__version__"]

__version__ = "1.5.2"
_NANOS_PER_SEC = 1_000_000_000
ROOT_INODE = ll.ROOT_INO
default_options = frozenset(("big_writes", "default_permissions", "no_splice_read",
                             "splice_write", "splice_move"))


class Lock:
    """llfuse's global lock: held while a handler runs; the class of :data:`lock`. A mutex in
    pyfuse's C shim, which takes it before every call into the filesystem (waiting for it
    without the GIL, as llfuse does) and lets go of it after; :meth:`acquire` and
    :meth:`release` take and let go of the same mutex (without the GIL while waiting)."""

    _made = False

    def __init__(self) -> None:
        if Lock._made:
            raise TypeError("Lock instances can't be created, use the llfuse.lock instance")
        Lock._made = True
        g = lib.pyfuse_glock_new()
        if g == ffi.NULL:
            raise MemoryError("llfuse.lock: no memory for the lock")
        self._g = ffi.gc(g, lib.pyfuse_glock_free)

    def acquire(self, timeout: Optional[float] = None) -> bool:
        """Take the lock (False if ``timeout`` seconds passed first); RuntimeError if this
        thread holds it already, as llfuse's."""
        rc = lib.pyfuse_glock_acquire(self._g, -1.0 if timeout is None else float(timeout))
        if rc == -errno.EDEADLK:
            raise RuntimeError("Global lock cannot be acquired more than once")
        if rc < 0:
            raise OSError(-rc, f"llfuse.lock.acquire: {os.strerror(-rc)}")
        return rc == 1

    def release(self) -> None:
        """Let go of the lock; RuntimeError unless this thread holds it, as llfuse's."""
        if lib.pyfuse_glock_release(self._g) == -errno.EPERM:
            raise RuntimeError("Lock can only be released by the holding thread")

    def held(self) -> bool:
        """Whether this thread holds the lock (pyfuse's addition)."""
        return bool(lib.pyfuse_glock_held(self._g))

    def yield_(self, count: int = 1) -> None:
        """Let another thread that waits for the lock have it, ``count`` times."""
        for _ in range(count):
            self.release()
            time.sleep(0)
            self.acquire()

    def __enter__(self) -> None:
        self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def __getstate__(self) -> None:
        from pickle import PicklingError

        raise PicklingError("Lock instances can't be pickled")

    def __reduce_ex__(self, protocol: Any) -> Any:
        self.__getstate__()


class NoLockManager:
    """The class of :data:`lock_released`: runs a block without the global lock."""

    def __enter__(self) -> None:
        lock.release()

    def __exit__(self, *exc: Any) -> None:
        lock.acquire()

    def __getstate__(self) -> None:
        from pickle import PicklingError

        raise PicklingError("NoLockManager instances can't be pickled")

    def __reduce_ex__(self, protocol: Any) -> Any:
        self.__getstate__()


lock = Lock()
lock_released = NoLockManager()


def _enosys() -> FUSEError:
    return FUSEError(errno.ENOSYS)


class Operations:
    """Base class of an llfuse filesystem: synchronous handlers with llfuse's signatures
    (the defaults answer ENOSYS; init, destroy and forget do nothing)."""

    def init(self) -> None:
        pass

    def destroy(self) -> None:
        pass

    def lookup(self, parent_inode: int, name: bytes, ctx: RequestContext) -> EntryAttributes:
        raise _enosys()

    def forget(self, inode_list: Any) -> None:
        pass

    def getattr(self, inode: int, ctx: RequestContext) -> EntryAttributes:
        raise _enosys()

    def setattr(self, inode: int, attr: EntryAttributes, fields: SetattrFields,
                fh: Optional[int], ctx: RequestContext) -> EntryAttributes:
        raise _enosys()

    def readlink(self, inode: int, ctx: RequestContext) -> bytes:
        raise _enosys()

    def mknod(self, parent_inode: int, name: bytes, mode: int, rdev: int,
              ctx: RequestContext) -> EntryAttributes:
        raise _enosys()

    def mkdir(self, parent_inode: int, name: bytes, mode: int,
              ctx: RequestContext) -> EntryAttributes:
        raise _enosys()

    def unlink(self, parent_inode: int, name: bytes, ctx: RequestContext) -> None:
        raise _enosys()

    def rmdir(self, parent_inode: int, name: bytes, ctx: RequestContext) -> None:
        raise _enosys()

    def symlink(self, parent_inode: int, name: bytes, target: bytes,
                ctx: RequestContext) -> EntryAttributes:
        raise _enosys()

    def rename(self, parent_inode_old: int, name_old: bytes, parent_inode_new: int,
               name_new: bytes, ctx: RequestContext) -> None:
        raise _enosys()

    def link(self, inode: int, new_parent_inode: int, new_name: bytes,
             ctx: RequestContext) -> EntryAttributes:
        raise _enosys()

    def open(self, inode: int, flags: int, ctx: RequestContext) -> int:
        raise _enosys()

    def read(self, fh: int, off: int, size: int) -> bytes:
        raise _enosys()

    def write(self, fh: int, off: int, buf: bytes) -> int:
        raise _enosys()

    def flush(self, fh: int) -> None:
        raise _enosys()

    def release(self, fh: int) -> None:
        raise _enosys()

    def fsync(self, fh: int, datasync: bool) -> None:
        raise _enosys()

    def opendir(self, inode: int, ctx: RequestContext) -> int:
        raise _enosys()

    def readdir(self, fh: int, off: int) -> Iterable[tuple[bytes, EntryAttributes, int]]:
        raise _enosys()

    def releasedir(self, fh: int) -> None:
        raise _enosys()

    def fsyncdir(self, fh: int, datasync: bool) -> None:
        raise _enosys()

    def statfs(self, ctx: RequestContext) -> StatvfsData:
        raise _enosys()

    def stacktrace(self) -> None:
        """llfuse dumps the threads' stacks on a special xattr: not offered here."""

    def setxattr(self, inode: int, name: bytes, value: bytes, ctx: RequestContext) -> None:
        raise _enosys()

    def getxattr(self, inode: int, name: bytes, ctx: RequestContext) -> bytes:
        raise _enosys()

    def listxattr(self, inode: int, ctx: RequestContext) -> Iterable[bytes]:
        raise _enosys()

    def removexattr(self, inode: int, name: bytes, ctx: RequestContext) -> None:
        raise _enosys()

    def access(self, inode: int, mode: int, ctx: RequestContext) -> bool:
        raise _enosys()

    def create(self, parent_inode: int, name: bytes, mode: int, flags: int,
               ctx: RequestContext) -> tuple[int, EntryAttributes]:
        raise _enosys()


_session: Optional[ll.Session] = None
#: libfuse 2 options libfuse 3 always behaves as (dropped), and the splice ones (Config's).
#: Those that name a Config field (atomic_o_trunc, auto_inval_data, async_dio...) set it.
_DROPPED = {"big_writes", "nonempty"}
_SPLICE = {"splice_read": ("splice_read", True), "no_splice_read": ("splice_read", False),
           "splice_write": ("splice_write", True), "no_splice_write": ("splice_write", False),
           "splice_move": ("splice_move", True), "no_splice_move": ("splice_move", False)}


def init(ops: Any, mountpoint: str, options: Iterable[str] = default_options) -> None:
    """Mount ``ops`` (an :class:`Operations`) at ``mountpoint`` with libfuse ``options``
    (a set of strings); serve with :func:`main`."""
    global _session
    from ._adapter import adapt

    if not isinstance(mountpoint, str):
        raise TypeError("*mountpoint_* argument must be of type str")
    if _session is not None:
        raise RuntimeError("llfuse.init() called twice without close()")
    kw: dict[str, Any] = {"options": {}}
    splice: dict[str, bool] = {}
    for opt in options:
        key, eq, value = opt.partition("=")
        if key in _DROPPED:
            continue
        if key in _SPLICE:
            splice[_SPLICE[key][0]] = _SPLICE[key][1]
        elif key == "debug":
            kw["debug"] = True
        elif key in ("allow_other", "default_permissions", "ro") and not eq:
            kw[key] = True
        elif key in ("fsname", "subtype") and eq:
            kw[key] = value
        else:
            kw["options"][key] = value if eq else True
    # libfuse 2's connection (llfuse's): O_TRUNC as a truncate (setattr) after the open...
    config = Config(entry_timeout=300, attr_timeout=300, readdirplus="off",
                    **{**Config.FUSE2, **splice})
    session = ll.Session(adapt(ops, lock), mountpoint, config=config, **kw)
    session._dup_names = True  # llfuse hands the kernel a listing as it is
    serve_entries(session)  # EntryAttributes returned as they are, packed by the callback
    session._bytes_names = True  # names as the kernel's bytes, as the filesystem takes them
    session._plain_fh = True  # file handles of all 64 bits, as the original's
    session.mount()
    # every handler inside llfuse's lock, taken by C (requests are served from main() on)
    lib.pyfuse_session_set_glock(session._c, lock._g)
    _session = session


def main(workers: Optional[int] = None, handle_signals: bool = True) -> Optional[int]:
    """Serve until the filesystem is unmounted (returns None) or, with ``handle_signals``,
    SIGINT, SIGTERM or SIGHUP arrives (unmounts, returns the signal number). ``workers``:
    threads serving requests (1: one; None: up to 30)."""
    if _session is None:
        raise RuntimeError("Need to call init() before main()")
    if workers == 0:
        raise ValueError("No workers is not a good idea")
    s = _session
    s._threads = workers != 1
    s._max_threads = 30 if workers is None else max(int(workers), 1)
    s._signals = handle_signals
    return s.loop()


def close(unmount: bool = True) -> None:
    """Clean up after :func:`main`: unmount (if still mounted) and free the session."""
    global _session

    s, _session = _session, None
    if s is not None:
        s._free()  # main() never ran, or ended without an unmount


def _live() -> ll.Session:
    if _session is None:
        raise RuntimeError("the llfuse filesystem is not mounted (call init() first)")
    return _session


def invalidate_inode(inode: int, attr_only: bool = False) -> None:
    """Drop the kernel's cached attributes (and data, unless ``attr_only``) of ``inode``;
    sent from pyfuse's notifier thread (never waits), as llfuse's notification thread
    does."""
    from ..._pyfuse_c import lib

    _live()._notify(f"invalidate_inode({inode})", lib.pyfuse_notify_inval_inode, inode,
                    -1 if attr_only else 0, 0, later=True)


def invalidate_entry(inode_p: int, name: bytes) -> None:
    """Drop the kernel's cached ``name`` in directory ``inode_p`` (never waits)."""
    from ..._pyfuse_c import lib

    raw = bytes(name)
    _live()._notify(f"invalidate_entry({inode_p}, {raw!r})", lib.pyfuse_notify_inval_entry,
                    inode_p, raw, len(raw), later=True)


def notify_store(inode: int, offset: int, data: bytes) -> None:
    """Put ``data`` into the kernel's page cache of ``inode`` at ``offset`` (never waits)."""
    from ..._pyfuse_c import lib

    data = bytes(data)
    _live()._notify(f"notify_store({inode}, {offset})", lib.pyfuse_notify_store, inode,
                    offset, data, len(data), later=True)


def get_ino_t_bits() -> int:
    """Bits of an inode number (libfuse's fuse_ino_t)."""
    return 64


def get_off_t_bits() -> int:
    """Bits of a file offset (off_t)."""
    return 64


