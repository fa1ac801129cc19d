"""pyfuse3 filesystems on pyfuse, unchanged: ``import pyfuse.compat.pyfuse3 as pyfuse3`` (the
runner, ``python -m pyfuse.compat``, makes ``import pyfuse3`` resolve here).

pyfuse3 3.5's API on :mod:`pyfuse.lowlevel`: ``init`` mounts, ``await main()`` serves inside
the running trio run (or asyncio event loop after ``pyfuse3.asyncio.enable()``) until the
filesystem is unmounted, ``close`` cleans up. Every handler of the pyfuse3 class runs as a
task on that loop (as on pyfuse3, one thread runs them all), while libfuse's thread reads the
requests; lookup counts are pyfuse's own, listings go through its readdir engine a batch at a
time. docs/compat.md lists the differences.
"""
from __future__ import annotations

import errno
import logging
import os
import threading
from typing import Any, Iterable, Optional

from ... import lowlevel as ll
from ..._core.convert import ATTR_STRUCT as _ATTR_STRUCT
from ..._core.poll import PollHandle  # what poll() is given: notify() wakes the pollers
from ...types import Config
from ._ops import Operations
from ._types import (
    ENOATTR,
    EntryAttributes,
    FileHandleT,
    FileInfo,
    FileNameT,
    FlagT,
    FUSEError,
    InodeT,
    ModeT,
    ReaddirToken,
    RequestContext,
    SetattrFields,
    StatvfsData,
    XAttrNameT,
    packed_attr,
)

__all__ = ["Operations", "EntryAttributes", "FileInfo", "StatvfsData", "SetattrFields",
           "RequestContext", "FUSEError", "ReaddirToken", "FileHandleT", "FileNameT", "FlagT",
           "InodeT", "ModeT", "XAttrNameT", "ENOATTR", "ROOT_INODE", "RENAME_EXCHANGE",
           "RENAME_NOREPLACE", "default_options", "trio_token", "init", "main", "terminate",
           "close", "invalidate_inode", "invalidate_entry", "invalidate_entry_async",
           "notify_store", "readdir_reply", "listdir", "syncfs", "setxattr", "getxattr",
           "get_sup_groups", "PollHandle", "__version__"]

log = logging.getLogger("pyfuse3")
_pack_attr = _ATTR_STRUCT.pack

__version__ = "3.5.0"
_NANOS_PER_SEC = 1_000_000_000
ROOT_INODE: InodeT = ll.ROOT_INO
RENAME_EXCHANGE: FlagT = 2
RENAME_NOREPLACE: FlagT = 1
default_options = frozenset(("default_permissions",))
#: The trio token of the run serving the filesystem while main() runs ("asyncio" under
#: asyncio, as pyfuse3.asyncio's), else None.
trio_token: Any = None

_session: Optional[ll.Session] = None
_ops: Any = None


def _kwargs(options: Iterable[str]) -> dict[str, Any]:
    """pyfuse3's option strings as session arguments."""
    kw: dict[str, Any] = {"options": {}}
    for opt in options:
        key, eq, value = opt.partition("=")
        if key == "debug":
            kw["debug"] = True
        elif key in ("allow_other", "default_permissions", "ro") and not eq:
            kw[key] = True
        elif key in ("fsname", "subtype") and eq:
            kw[key] = value
        else:
            kw["options"][key] = value if eq else True
    return kw


def init(ops: Any, mountpoint: str, options: Iterable[str] = default_options) -> None:
    """Mount ``ops`` (a :class:`Operations`) at ``mountpoint`` with libfuse ``options`` (a
    set of strings, e.g. ``default_options | {"fsname=x"}``); serve with :func:`main`."""
    global _session, _ops
    from ._adapter import adapt

    if not isinstance(mountpoint, str):
        raise TypeError("*mountpoint_* argument must be of type str")
    if _session is not None:
        raise RuntimeError("pyfuse3.init() called twice without close()")
    kw = _kwargs(options)
    # READDIRPLUS always, as pyfuse3 (its listings carry attributes: each entry counts a
    # lookup, which the filesystem's forget gets back)
    config = Config(entry_timeout=300, attr_timeout=300, readdirplus="always",
                    writeback_cache=bool(getattr(ops, "enable_writeback_cache", False)),
                    posix_acl=bool(getattr(ops, "enable_acl", False)),
                    export_support=True if getattr(ops, "supports_dot_lookup", True) else None,
                    parallel_dirops=None)  # libfuse's default, as pyfuse3's
    session = ll.Session(adapt(ops), mountpoint, threads=False, signals=False, config=config,
                         **kw)
    session._dup_names = True  # pyfuse3 hands the kernel a listing as it is
    session._packed = True  # to_entry's packed entries
    session._bytes_names = True  # names as the kernel's bytes, as the filesystem takes them
    session._plain_fh = True  # file handles of all 64 bits, as the original's
    session.mount()
    _session, _ops = session, ops


async def main(min_tasks: int = 1, max_tasks: int = 99) -> None:
    """Serve the filesystem :func:`init` mounted, inside the running trio run (or asyncio
    event loop), until it is unmounted or :func:`terminate` is called. At most ``max_tasks``
    requests are in progress at once, as pyfuse3's worker tasks (1: one at a time);
    ``min_tasks`` (pyfuse3's idle readers kept) is accepted and not needed: pyfuse keeps up
    to 32 idle workers."""
    global trio_token
    from ...lowlevel._serve import _trio, serving

    if _session is None:
        raise RuntimeError("Need to call init() before main()")
    trio = _trio()
    trio_token = trio.lowlevel.current_trio_token() if trio is not None else "asyncio"
    try:
        async with serving.of(_session, on_loop=True,
                              max_tasks=max(int(max_tasks), 1)) as session:
            await session.unmounted()
    finally:
        trio_token = None


def terminate() -> None:
    """End :func:`main`: the filesystem is unmounted (pyfuse3 leaves that to close())."""
    if _session is not None:
        threading.Thread(target=_session.stop, name="pyfuse3-terminate", daemon=True).start()


def close(unmount: bool = True) -> None:
    """Clean up after :func:`main`: unmount (if still mounted) and free the session."""
    global _session, _ops

    s, _session, _ops = _session, None, None
    if s is not None:
        s._free()  # main() never ran, or ended without an unmount


def _live() -> ll.Session:
    if _session is None:
        raise RuntimeError("the pyfuse3 filesystem is not mounted (call init() first)")
    return _session


def invalidate_inode(inode: InodeT, attr_only: bool = False) -> None:
    """Drop the kernel's cached attributes of ``inode`` (and its data, unless
    ``attr_only``). Sent at once, also from inside a handler, as pyfuse3 does (so the caller
    must not hold up a request on that inode, which the kernel would wait for)."""
    from ..._pyfuse_c import lib

    _live()._notify(f"invalidate_inode({inode})", lib.pyfuse_notify_inval_inode, inode,
                    -1 if attr_only else 0, 0, now=True)


def invalidate_entry(inode_p: InodeT, name: FileNameT, deleted: InodeT = 0) -> None:
    """Drop the kernel's cached ``name`` in directory ``inode_p`` (``deleted``: the inode it
    named, now removed). Sent at once, as :func:`invalidate_inode` says."""
    from ..._pyfuse_c import lib

    s, raw = _live(), bytes(name)
    if deleted:
        s._notify(f"notify_delete(parent={inode_p}, ino={deleted}, name={raw!r})",
                  lib.pyfuse_notify_delete, inode_p, deleted, raw, len(raw), now=True)
    else:
        s._notify(f"invalidate_entry(parent={inode_p}, name={raw!r})",
                  lib.pyfuse_notify_inval_entry, inode_p, raw, len(raw), now=True)


def invalidate_entry_async(inode_p: InodeT, name: FileNameT, deleted: InodeT = 0,
                           ignore_enoent: bool = False) -> None:
    """:func:`invalidate_entry`, sent later from pyfuse's notifier thread (never waits; an
    error is logged, ENOENT never)."""
    from ..._pyfuse_c import lib

    s = _live()
    raw = bytes(name)
    if deleted:
        s._notify(f"notify_delete(parent={inode_p}, ino={deleted}, name={raw!r})",
                  lib.pyfuse_notify_delete, inode_p, deleted, raw, len(raw), later=True)
    else:
        s._notify(f"invalidate_entry(parent={inode_p}, name={raw!r})",
                  lib.pyfuse_notify_inval_entry, inode_p, raw, len(raw), later=True)


def notify_store(inode: InodeT, offset: int, data: bytes) -> None:
    """Put ``data`` into the kernel's page cache of ``inode`` at ``offset`` (at once, as
    :func:`invalidate_inode` says)."""
    from ..._pyfuse_c import lib

    data = bytes(data)
    _live()._notify(f"notify_store({inode}, {offset}, {len(data)} bytes)",
                    lib.pyfuse_notify_store, inode, offset, data, len(data), now=True)


def readdir_reply(token: ReaddirToken, name: FileNameT, attr: EntryAttributes,
                  next_id: int) -> bool:
    """Add an entry to a readdir's listing; False once the batch is full (stop, and resume
    at ``next_id``'s entry in the next call)."""
    entries = token.entries
    n = len(entries)
    if n >= token.room:
        return False
    # packed now (the program may change ``attr`` for its next entry), as plain bytes: a
    # listing's batch takes bytes of struct pyfuse_attr's size as packed (a PackedAttr, the
    # bytes subclass replies need, costs a third of this call more). packed_attr's common
    # case, inline (one Python frame fewer an entry)
    try:
        packed = _pack_attr(
            attr.st_mode, attr.st_ino, attr.st_nlink, attr.st_uid, attr.st_gid, attr.st_size,
            attr.st_blocks, attr.st_rdev, attr.st_blksize, attr.st_atime_ns, attr.st_mtime_ns,
            attr.st_ctime_ns)
    except Exception:
        packed = packed_attr(attr)  # float times; or a bad value, which the listing reports
    # the name as given (bytes: the listing joins them as they are)
    entries.append((name if type(name) is bytes else os.fsencode(name), packed, next_id))
    et, at = attr.entry_timeout, attr.attr_timeout
    if et != token.entry_timeout or at != token.attr_timeout:
        token.timeouts(et, at)  # the listing's entries get the lowest
    return n + 1 < token.room


def listdir(path: str) -> list[str]:
    """Like os.listdir (pyfuse3 releases the GIL; so does os.listdir)."""
    if not isinstance(path, str):
        raise TypeError("*path* argument must be of type str")
    return os.listdir(path)


def syncfs(path: str) -> None:
    """syncfs(2) of the filesystem holding ``path``."""
    import ctypes

    fd = os.open(path, os.O_DIRECTORY)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syncfs(fd) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e), path)
    finally:
        os.close(fd)


def _check_xattr_args(path: Any, name: Any, namespace: str) -> None:
    if not isinstance(path, str):
        raise TypeError("*path* argument must be of type str")
    if not isinstance(name, str):
        raise TypeError("*name* argument must be of type str")
    if namespace not in ("system", "user"):
        raise ValueError(f'*namespace* parameter must be "system" or "user", not {namespace}')


def setxattr(path: str, name: str, value: bytes, namespace: str = "user") -> None:
    """Set an extended attribute (``namespace`` matters on FreeBSD only, as on pyfuse3)."""
    _check_xattr_args(path, name, namespace)
    os.setxattr(path, name, value)


def getxattr(path: str, name: str, size_guess: int = 128, namespace: str = "user") -> bytes:
    """An extended attribute's value."""
    _check_xattr_args(path, name, namespace)
    return os.getxattr(path, name)


def get_sup_groups(pid: int) -> set[int]:
    """The supplementary groups of process ``pid`` (from /proc)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Groups:"):
                return {int(g) for g in line.split()[1:]}
    raise OSError(errno.ENOENT, f"no Groups line in /proc/{pid}/status")


from . import asyncio  # noqa: E402  (pyfuse3.asyncio, as pyfuse3 has it)

__all__ += ["asyncio"]
