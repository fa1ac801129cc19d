"""fusepy filesystems on pyfuse, unchanged: ``import pyfuse.compat as fuse`` (and mfusepy
ones: ``import pyfuse.compat.mfusepy as mfusepy``).

The public API of fusepy 3.0.1 (``FUSE``, ``Operations``, ``LoggingMixIn``, ``FuseOSError``,
``fuse_get_context``, ``fuse_exit``, ``ENOTSUP``, the ctypes types and helpers, ...), served by
pyfuse's session, loop and C readdir engine instead of ctypes, calling the filesystem's
methods with exactly the arguments fusepy passes (through the class's own ``__call__`` when it
has one). :mod:`pyfuse.compat.mfusepy` is mfusepy 3.1's module, calling as mfusepy does.
``python -m pyfuse.compat SCRIPT [ARGS...]`` runs an existing program with ``import fuse``
and ``import mfusepy`` resolving to them. docs/compat.md lists where behaviour differs.
"""
from __future__ import annotations

import dataclasses
import errno
import functools
import logging
import os
import threading
import time
import warnings
from typing import Any, Callable, Optional

from .._daemon import daemonize
from ..session import context
from ..types import Config as _Config
from ._adapter import CompatSession, adapt
from ._convert import RawFileInfo
from ._ctypes import (  # fusepy's ctypes names (for filesystems that use them themselves)
    basestring,
    c_dev_t,
    c_fsblkcnt_t,
    c_fsfilcnt_t,
    c_gid_t,
    c_mode_t,
    c_off_t,
    c_pid_t,
    c_stat,
    c_statvfs,
    c_timespec,
    c_uid_t,
    c_utimbuf,
    fuse_context,
    fuse_operations,
    get_fuse_version,
    getxattr_t,
    set_st_attrs,
    setxattr_t,
    time_of_timespec,
)

__all__ = ["FUSE", "Operations", "LoggingMixIn", "FuseOSError", "fuse_get_context",
           "fuse_exit", "ENOTSUP", "ENOATTR", "log_callback", "overrides", "fuse_file_info",
           "fuse_version_major", "fuse_version_minor", "basestring", "c_dev_t",
           "c_fsblkcnt_t", "c_fsfilcnt_t", "c_gid_t", "c_mode_t", "c_off_t", "c_pid_t",
           "c_stat", "c_statvfs", "c_timespec", "c_uid_t", "c_utimbuf", "fuse_context",
           "fuse_operations", "getxattr_t", "set_st_attrs", "setxattr_t", "time_of_timespec"]

log = logging.getLogger("fuse")

ENOTSUP = errno.ENOTSUP
ENOATTR = errno.ENODATA
#: The libfuse pyfuse runs on (mfusepy programs test these).
fuse_version_major, fuse_version_minor = get_fuse_version()
#: fusepy's name of the object ``raw_fi=True`` filesystems get.
fuse_file_info = RawFileInfo


class FuseOSError(OSError):
    """``raise FuseOSError(errno.ENOENT)``: the errno the caller sees."""

    def __init__(self, errno: int) -> None:  # noqa: A002 (fusepy's parameter name)
        super().__init__(errno, os.strerror(errno))


#: The sessions FUSE() is serving (fuse_exit() stops the one whose request is running).
_sessions: list[Any] = []
_sessions_lock = threading.Lock()


def fuse_get_context() -> tuple[int, int, int]:
    """``(uid, gid, pid)`` of the process whose request is being served."""
    c = context()
    return c.uid, c.gid, c.pid


def fuse_exit() -> None:
    """Stop serving, as after SIGINT: the mount is unmounted and ``FUSE()`` returns. Called
    from a handler, that request is answered first (the unmount waits a tenth of a second on
    another thread; unmounting at once would cut the reply off)."""
    with _sessions_lock:
        sessions = list(_sessions)

    def stop() -> None:
        time.sleep(0.1)
        for s in sessions:
            s.stop()

    threading.Thread(target=stop, name="pyfuse-fuse-exit", daemon=True).start()


def _ignored(method: Callable[..., Any]) -> Callable[..., Any]:
    """A default that answers as libfuse does when the operation is not registered, so it
    is not registered (mfusepy's ``libfuse_ignore`` mark)."""
    method.libfuse_ignore = True  # type: ignore[attr-defined]
    return method


class Operations:
    """fusepy's base class, with fusepy's defaults: a filesystem overrides what it implements.

    ``__call__(op, *args)`` is how every operation is called; a subclass may override it to
    wrap them all (as :class:`LoggingMixIn` does). The defaults that answer as libfuse does
    without the operation (access, flush, fsync, fsyncdir, open, opendir, release, releasedir,
    init, destroy and the extended-attribute ones) are not registered, which saves a Python
    call on every such request; the others (chmod and the like answering EROFS, getattr of
    "/", readdir of "." and "..", ...) are fusepy's.
    """

    def __call__(self, op: str, *args: Any) -> Any:
        if not hasattr(self, op):
            raise FuseOSError(errno.EFAULT)
        return getattr(self, op)(*args)

    @_ignored
    def access(self, path: str, amode: int) -> int:
        return 0

    bmap = None

    def chmod(self, path: str, mode: int) -> int:
        raise FuseOSError(errno.EROFS)

    def chown(self, path: str, uid: int, gid: int) -> int:
        raise FuseOSError(errno.EROFS)

    def create(self, path: str, mode: int, fi: Any = None) -> int:
        """Without raw_fi, return a file handle; with it, set ``fi.fh`` and return 0."""
        raise FuseOSError(errno.EROFS)

    @_ignored
    def destroy(self, path: str) -> None:
        """Called when the filesystem ends (path is always "/")."""

    @_ignored
    def flush(self, path: str, fh: Any) -> int:
        return 0

    @_ignored
    def fsync(self, path: str, datasync: int, fh: Any) -> int:
        return 0

    @_ignored
    def fsyncdir(self, path: str, datasync: int, fh: Any) -> int:
        return 0

    def getattr(self, path: str, fh: Any = None) -> dict[str, Any]:
        """A dict with the keys of ``struct stat`` (st_mode, st_size, st_mtime, ...); times
        are float seconds, or integer nanoseconds when the class sets ``use_ns = True``."""
        if path != "/":
            raise FuseOSError(errno.ENOENT)
        return dict(st_mode=(0o040000 | 0o755), st_nlink=2)

    @_ignored
    def getxattr(self, path: str, name: str, position: int = 0) -> bytes:
        raise FuseOSError(ENOTSUP)

    @_ignored
    def init(self, path: str) -> None:
        """Called when the filesystem starts serving (path is always "/")."""

    @_ignored
    def init_with_config(self, conn_info: Any, config_3: Any) -> None:
        """mfusepy's init; pyfuse passes None for both (see docs/compat.md)."""

    @_ignored
    def ioctl(self, path: str, cmd: int, arg: Any, fip: Any, flags: int, data: Any) -> int:
        raise FuseOSError(errno.ENOTTY)

    def link(self, target: str, source: str) -> int:
        """A hard link ``target`` to ``source`` (ln source target)."""
        raise FuseOSError(errno.EROFS)

    def listxattr(self, path: str) -> list[str]:
        return []

    lock = None

    def mkdir(self, path: str, mode: int) -> int:
        raise FuseOSError(errno.EROFS)

    def mknod(self, path: str, mode: int, dev: int) -> int:
        raise FuseOSError(errno.EROFS)

    @_ignored
    def open(self, path: str, flags: int) -> int:
        """Without raw_fi, return a file handle; with it, ``open(path, fi)`` sets ``fi.fh``."""
        return 0

    @_ignored
    def opendir(self, path: str) -> int:
        return 0

    def read(self, path: str, size: int, offset: int, fh: Any) -> bytes:
        raise FuseOSError(errno.EIO)

    def readdir(self, path: str, fh: Any) -> Any:
        """A list of names, or of ``(name, attrs, offset)`` tuples (attrs a dict as getattr's,
        or None)."""
        return [".", ".."]

    @_ignored
    def readdir_with_offset(self, path: str, offset: int, fh: Any) -> Any:
        """mfusepy's readdir that resumes at ``offset`` (entries carry their own offsets)."""
        return [".", ".."]

    def readlink(self, path: str) -> str:
        raise FuseOSError(errno.ENOENT)

    @_ignored
    def release(self, path: str, fh: Any) -> int:
        return 0

    @_ignored
    def releasedir(self, path: str, fh: Any) -> int:
        return 0

    @_ignored
    def removexattr(self, path: str, name: str) -> int:
        raise FuseOSError(ENOTSUP)

    def rename(self, old: str, new: str) -> int:
        raise FuseOSError(errno.EROFS)

    def rmdir(self, path: str) -> int:
        raise FuseOSError(errno.EROFS)

    @_ignored
    def setxattr(self, path: str, name: str, value: bytes, options: int,
                 position: int = 0) -> int:
        raise FuseOSError(ENOTSUP)

    def statfs(self, path: str) -> dict[str, int]:
        """A dict with the keys of ``struct statvfs`` (f_bsize, f_blocks, ...)."""
        return {}

    def symlink(self, target: str, source: str) -> int:
        """A symbolic link ``target`` pointing at ``source`` (ln -s source target)."""
        raise FuseOSError(errno.EROFS)

    def truncate(self, path: str, length: int, fh: Any = None) -> int:
        raise FuseOSError(errno.EROFS)

    def unlink(self, path: str) -> int:
        raise FuseOSError(errno.EROFS)

    def utimens(self, path: str, times: Optional[tuple[Any, Any]] = None) -> int:
        """``times`` is ``(atime, mtime)``, float seconds (or nanoseconds with use_ns)."""
        return 0

    def write(self, path: str, data: bytes, offset: int, fh: Any) -> int:
        raise FuseOSError(errno.EROFS)


class LoggingMixIn:
    """Logs every operation, its arguments and its result on the ``fuse.log-mixin`` logger at
    DEBUG (put it before Operations in the bases)."""

    log = logging.getLogger("fuse.log-mixin")

    def __call__(self, op: str, path: str, *args: Any) -> Any:
        self.log.debug("-> %s %s %s", op, path, repr(args))
        ret: Any = "[Unhandled Exception]"
        try:
            ret = getattr(self, op)(path, *args)
            return ret
        except OSError as e:
            ret = str(e)
            raise
        finally:
            self.log.debug("<- %s %s", op, repr(ret))


def _log_method_call(method: Callable[..., Any], *args: Any) -> Any:
    """Call ``method(*args)``, logging the call and its result (or OSError) on
    ``fuse.log-mixin`` at DEBUG: log_callback's body, and mfusepy's LoggingMixIn's."""
    LoggingMixIn.log.debug("-> %s %s", method.__name__, repr(args))
    ret: Any = "[Unhandled Exception]"
    try:
        ret = method(*args)
        return ret
    except OSError as e:
        ret = str(e)
        raise
    finally:
        LoggingMixIn.log.debug("<- %s %s", method.__name__, repr(ret))


def log_callback(method: Callable[..., Any]) -> Callable[..., Any]:
    """mfusepy's decorator: log this method's calls as LoggingMixIn does."""
    @functools.wraps(method)
    def logged(*args: Any) -> Any:
        return _log_method_call(method, *args)
    return logged


def overrides(parent_class: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """mfusepy's decorator: assert that the method overrides one of ``parent_class``."""
    def overrider(method: Callable[..., Any]) -> Callable[..., Any]:
        if method.__name__ not in dir(parent_class):
            raise AssertionError(f"{method.__name__} overrides nothing in "
                                 f"{parent_class.__name__}")
        return method
    return overrider


#: fusepy keyword arguments that are pyfuse session arguments (the rest are -o options).
_SESSION_ARGS = ("ro", "allow_other", "default_permissions", "fsname", "subtype")
#: libfuse 2 options whose behaviour libfuse 3 always has: accepted and dropped.
_ALWAYS_IN_FUSE3 = {"big_writes", "nonempty"}
#: libfuse 2 options with no libfuse 3 equivalent: refused by name.
_FUSE2_ONLY = {"large_read": "libfuse 3 dropped it (reads are as large as max_read allows)"}


class FUSE:
    """Mount ``operations`` at ``mountpoint`` and serve until unmounted, as fusepy's FUSE.

    The constructor returns when the filesystem is unmounted. ``foreground=False`` (fusepy's
    default) mounts, then forks: the calling process exits with status 0 once the mount is
    live, and the code after ``FUSE(...)`` runs in the daemon when the filesystem ends.
    ``nothreads=True`` serves on one thread; ``debug=True`` logs libfuse's request trace on the
    ``pyfuse`` logger. Other keyword arguments are mount options (``allow_other=True``,
    ``fsname="x"``, ``attr_timeout=0``; those that name a :class:`pyfuse.Config` field set it).
    ``raw_fi=True`` passes a :data:`fuse_file_info` object instead of the ``fh`` int;
    ``encoding``/``errors`` decode paths. pyfuse's own: ``readdir_getattr`` (default True):
    when the kernel asks for readdirplus and readdir gave bare names, call getattr for each
    entry inside that request rather than let the kernel send a LOOKUP per entry. With
    ``entry_timeout=0`` the kernel looks every entry up again anyway: listings are then plain
    READDIR (``Config(readdirplus="off")``, unless a ``readdirplus`` option says otherwise).
    """

    OPTIONS = (("foreground", "-f"), ("debug", "-d"), ("nothreads", "-s"))
    #: Whose calling conventions the filesystem's methods get ("fusepy"; the FUSE of
    #: :mod:`pyfuse.compat.mfusepy` has "mfusepy").
    flavor = "fusepy"

    def __init__(self, operations: Any, mountpoint: str, raw_fi: bool = False,
                 encoding: str = "utf-8", errors: str = "surrogateescape",
                 **kwargs: Any) -> None:
        self.operations = operations
        self.raw_fi = raw_fi
        self.encoding = encoding
        self.errors = errors
        self.use_ns = bool(getattr(operations, "use_ns", False))
        if not self.use_ns:
            warnings.warn("Time as floating point seconds for utimens is deprecated!\n"
                          "To enable time as nanoseconds set the property \"use_ns\" to True "
                          "in your operations class.", DeprecationWarning,
                          stacklevel=1)  # fusepy's: hidden by the default warning filters
        foreground = bool(kwargs.pop("foreground", False))
        debug = bool(kwargs.pop("debug", False))
        nothreads = bool(kwargs.pop("nothreads", False))
        readdir_getattr = bool(kwargs.pop("readdir_getattr", True))
        kwargs.setdefault("fsname", type(operations).__name__)
        session_kw: dict[str, Any] = {k: kwargs.pop(k) for k in _SESSION_ARGS if k in kwargs}
        options: dict[str, Any] = {}
        for key, value in kwargs.items():
            if key in _ALWAYS_IN_FUSE3:
                continue
            if key in _FUSE2_ONLY:
                raise ValueError(f"FUSE(): the libfuse 2 option {key!r} has no libfuse 3 "
                                 f"equivalent in pyfuse.compat: {_FUSE2_ONLY[key]}")
            if value is False:
                continue  # fusepy drops false flags
            options[key] = value
        ops = adapt(operations, raw_fi=raw_fi, encoding=encoding, errors=errors,
                    readdir_getattr=readdir_getattr, flavor=self.flavor)
        try:
            # libfuse 2's connection: O_TRUNC as a truncate after the open, no automatic
            # invalidation of cached data... (an option of that name, e.g. atomic_o_trunc=True,
            # asks for one, as on libfuse 2)
            session = CompatSession(ops, os.fsdecode(mountpoint), threads=not nothreads,
                                    debug=debug, options=options,
                                    config=_Config(**_Config.FUSE2), **session_kw)
            if session.config.entry_timeout <= 0:
                # the kernel forgets a readdirplus entry at once and looks it up again: the
                # getattr inside the listing would be a second one, and the attributes sent
                # with the names (and libfuse's node for each) wasted: list names only
                ops._plus_getattr = False  # type: ignore[attr-defined]
                if "readdirplus" not in options:
                    session.config = dataclasses.replace(session.config, readdirplus="off")
            session.mount()
            if not foreground:
                daemonize()
            with _sessions_lock:
                _sessions.append(session)
            try:
                session.loop()
            finally:
                with _sessions_lock:
                    _sessions.remove(session)
        finally:
            del self.operations  # fusepy: "Invoke the destructor"
