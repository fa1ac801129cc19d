"""The value types handed between a filesystem and pyfuse (shared by every API).

Pure Python: their conversions to the shim's C structs live in :mod:`pyfuse._core.convert`.
"""
from __future__ import annotations

import ctypes
import math
import os
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Optional, Union

__all__ = ["Attr", "DirEntry", "StatVFS", "Config", "Lock", "Context", "FileInfo", "FdRange",
           "AttrLike"]

_U64, _I64 = ctypes.c_uint64, ctypes.c_int64
#: struct pyfuse_attr (csrc/pyfuse_cdef.h): Attr's fields, their C types and their order
_ATTR_FIELDS = [("mode", _U64), ("ino", _U64), ("nlink", _U64), ("uid", _U64), ("gid", _U64),
                ("size", _I64), ("blocks", _I64), ("rdev", _U64), ("blksize", _I64),
                ("atime_ns", _I64), ("mtime_ns", _I64), ("ctime_ns", _I64)]
_PACK_INTO = struct.Struct("=5Q2qQ4q").pack_into


class Attr(ctypes.Structure):
    """File attributes, as returned by :meth:`Operations.getattr` or carried by a :class:`DirEntry`.

    Times are integer nanoseconds since the epoch. ``ino`` is only passed to the kernel when the
    mount uses ``Config(use_ino=True)``; otherwise libfuse numbers inodes itself.

    Every field has a default, and the defaults are literal: ``mode`` 0 has no file type (give
    one, e.g. ``stat.S_IFREG | 0o644``, or the request fails with EIO), ``uid``/``gid`` 0 is
    root, and times 0 show as 1970-01-01 (pass ``time.time_ns()`` or the source's times).
    ``Attr.from_stat(os.lstat(p))`` fills every field from a real file.

    An Attr *is* the C struct the shim replies with (a :mod:`ctypes` structure of twelve 64-bit
    integers, ``FIELDS``): replying one, or a listing of them, copies its bytes and converts
    nothing. The constructor checks every value (a ``ValueError`` names the field out of its
    range, a ``TypeError`` a value that is not an integer); a field set later is stored as C
    stores it (an integer beyond 64 bits wraps), and the shim still refuses, with EIO and a
    logged error, a mode with no file type and a ``uid``, ``gid``, ``nlink`` or ``mode`` beyond
    32 bits.
    """

    _fields_ = _ATTR_FIELDS
    #: the field names, in the C struct's order
    FIELDS: ClassVar[tuple[str, ...]] = tuple(f for f, _ in _ATTR_FIELDS)
    if TYPE_CHECKING:  # the fields, as ctypes makes them
        mode: int
        ino: int
        nlink: int
        uid: int
        gid: int
        size: int
        blocks: int
        rdev: int
        blksize: int
        atime_ns: int
        mtime_ns: int
        ctime_ns: int

    def __init__(self, mode: int = 0, ino: int = 0, nlink: int = 1, uid: int = 0, gid: int = 0,
                 size: int = 0, blocks: int = 0, rdev: int = 0, blksize: int = 4096,
                 atime_ns: int = 0, mtime_ns: int = 0, ctime_ns: int = 0) -> None:
        try:
            _PACK_INTO(self, 0, mode, ino, nlink, uid, gid, size, blocks, rdev, blksize,
                       atime_ns, mtime_ns, ctime_ns)
        except struct.error:
            raise _refusal((mode, ino, nlink, uid, gid, size, blocks, rdev, blksize, atime_ns,
                            mtime_ns, ctime_ns)) from None

    @classmethod
    def from_stat(cls, st: os.stat_result) -> Attr:
        """Build an Attr from :func:`os.stat` / :func:`os.lstat` output."""
        return cls(st.st_mode, st.st_ino, st.st_nlink, st.st_uid, st.st_gid, st.st_size,
                   st.st_blocks, st.st_rdev, st.st_blksize, st.st_atime_ns, st.st_mtime_ns,
                   st.st_ctime_ns)

    def copy(self) -> Attr:
        """A copy (handy for filesystems that store Attr objects and hand out snapshots)."""
        return type(self).from_buffer_copy(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Attr):
            return NotImplemented
        return bytes(self) == bytes(other)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self.FIELDS)
        return f"Attr({inner})"


def _refusal(values: tuple[Any, ...]) -> Exception:
    """The error that names the first of Attr's ``values`` that its field cannot hold."""
    for (name, ctype), v in zip(_ATTR_FIELDS, values):
        if not isinstance(v, int):
            return TypeError(f"Attr.{name} must be an integer, not {type(v).__name__} "
                             f"({v!r:.40})")
        lo, hi = (0, 1 << 64) if ctype is _U64 else (-(1 << 63), 1 << 63)
        if not lo <= v < hi:
            return ValueError(f"Attr.{name}={v} is out of range for a 64-bit "
                              f"{'unsigned ' if ctype is _U64 else ''}integer")
    return ValueError(f"Attr{values!r}: a value that its field cannot hold")


AttrLike = Union[Attr, os.stat_result]


class DirEntry(NamedTuple):
    """One directory entry yielded by :meth:`Operations.readdir` (plain ``str`` names work too).

    ``attr`` (optional) goes to the kernel with the entry: with readdirplus it saves a lookup per
    entry, and in plain readdir it gives the entry type (``d_type``). ``offset`` is 0 (pyfuse
    numbers the entries itself) or, for filesystems that resume listings themselves, the non-zero
    offset from which a later ``readdir(path, offset, ...)`` continues *after* this entry.
    """

    name: str
    attr: Optional[AttrLike] = None
    offset: int = 0


class StatVFS(NamedTuple):
    """File system statistics for :meth:`Operations.statfs` (an os.statvfs_result works too)."""

    f_bsize: int = 4096
    f_frsize: int = 4096
    f_blocks: int = 0
    f_bfree: int = 0
    f_bavail: int = 0
    f_files: int = 0
    f_ffree: int = 0
    f_favail: int = 0
    f_fsid: int = 0
    f_flag: int = 0
    f_namemax: int = 255


@dataclass
class Config:
    """Mount-time settings copied into libfuse's ``struct fuse_config`` (see fuse.h).

    Timeouts are in seconds: how long the kernel may cache a name lookup (``entry_timeout``), the
    attributes (``attr_timeout``) and a failed lookup (``negative_timeout``). Set all three to 0 to
    see every request. ``hard_remove`` unlinks open files at once (instead of renaming them to
    ``.fuse_hidden*``); handlers then get ``path=None`` for such files and must use ``fh``.

    Data path (see docs/data-path.md): ``direct_io`` bypasses the page cache for every file (or
    per open: :class:`FileInfo`), ``kernel_cache`` keeps cached pages across opens.
    ``max_write`` caps one WRITE request (0: libfuse's default, 1 MiB on kernels with
    ``max_pages``, which follows from it); ``max_read`` caps one READ request (0: no cap
    beyond ``max_pages``); ``max_readahead`` lowers the kernel's readahead (it
    cannot raise it); ``max_background`` the number of asynchronous requests (readahead, direct
    I/O) in flight. ``splice_read``/``splice_write``/``splice_move``: ``None`` keeps libfuse's
    default; ``True`` asks for moving request and reply data through pipes with ``splice(2)``
    (used for :class:`FdRange` replies and :meth:`Operations.write_fd`), ``False`` declines.

    ``readdirplus``: when the kernel asks for attributes with a listing (docs/readdir.md).
    ``"auto"`` (the kernel's adaptive mode) sends READDIRPLUS while the reader also stats the
    entries, as ``ls -l`` does, and plain READDIR for names-only listings; but a reader that
    lists a whole directory before it stats (``find -ls``, ``du``, rsync, anything built on
    fts) gets plain READDIR and then one LOOKUP per entry. ``"always"`` makes every listing
    READDIRPLUS (best when readdir yields attributes cheaply); ``"off"`` never asks.
    ``writeback_cache``: the kernel caches writes and sends them later, in larger requests,
    and keeps file sizes itself (the filesystem must not change files behind its back).
    ``posix_acl``: the kernel applies POSIX ACLs (``system.posix_acl_access``/``_default``,
    stored with the filesystem's setxattr/getxattr) to permission checks, umask and new files;
    it implies the ``default_permissions`` mount option, which pyfuse then adds.

    Connection capabilities libfuse 3 turns on by default and libfuse 2 did not (``None``:
    libfuse's default; ``False`` declines; ``True`` asks, where the kernel offers it). The
    faces of libfuse 2 programs (:mod:`pyfuse.compat`'s fusepy and mfusepy, and its llfuse)
    decline them all, as libfuse 2 did, unless the program passes the option of that name.
    ``atomic_o_trunc``: ``open(O_TRUNC)`` arrives as one OPEN with ``O_TRUNC`` in its flags,
    which the ``open`` handler must apply; ``False``: the kernel strips ``O_TRUNC`` and sends a
    truncate (SETATTR of the size) right after the open. ``auto_inval_data``: the kernel drops
    a file's cached pages when it sees its mtime or size change (asking for the attributes
    again once ``attr_timeout`` has passed, as a read does). ``async_dio``: large direct-I/O
    requests are split and sent in parallel. ``parallel_dirops``: lookups and listings in one
    directory run concurrently. ``handle_killpriv``: the filesystem, not the kernel, clears
    setuid/setgid bits on write, truncate and chown. ``ioctl_dir``: ``ioctl`` on directories
    reaches the filesystem. ``export_support`` (off in both libfuses unless asked for): the
    filesystem answers lookups of ``.`` and ``..`` (the inode API), so the mount can be
    exported over NFS.

    ``parallel_dirops`` is on by default: lookups and listings in one directory run
    concurrently, as requests in different directories always do (libfuse's high-level API
    takes its own locks; an inode-API filesystem keeps its handlers thread-safe anyway).
    ``cache_symlinks``: the kernel keeps symlink targets it has read (``readlink`` is asked once
    until ``invalidate_inode`` of the link). ``no_open=True`` (the inode API): a filesystem that
    has no ``open`` gets no OPEN (nor RELEASE) requests at all, and one with neither
    ``opendir`` nor ``releasedir`` no OPENDIR (nor RELEASEDIR): pyfuse answers the kernel's
    first one ENOSYS, after which it sends none and keeps such files' pages and such
    directories' listings cached (as ``keep_cache`` and ``cache_readdir``). Off by default:
    a cached listing refreshes no attributes, so with short timeouts a listing followed by a
    ``stat`` of each entry costs a LOOKUP per entry instead of a READDIRPLUS per ~27
    (docs/caching.md, measured); without it pyfuse answers OPEN/OPENDIR in C. The path API
    always has OPEN and OPENDIR (libfuse's high-level API needs them).
    """

    #: Fields that are None (libfuse's default), True or False: capabilities to ask for.
    CAPABILITIES: ClassVar[tuple[str, ...]] = (
        "splice_read", "splice_write", "splice_move", "atomic_o_trunc", "auto_inval_data",
        "async_dio", "parallel_dirops", "handle_killpriv", "ioctl_dir", "export_support")
    #: What libfuse 2 programs get: the capabilities libfuse 2 did not ask for, declined.
    FUSE2: ClassVar[dict[str, Any]] = {
        "atomic_o_trunc": False, "auto_inval_data": False, "async_dio": False,
        "parallel_dirops": False, "handle_killpriv": False, "ioctl_dir": False,
        "no_open": False}

    entry_timeout: float = 1.0
    attr_timeout: float = 1.0
    negative_timeout: float = 0.0
    use_ino: bool = False
    readdir_ino: bool = False
    hard_remove: bool = False
    nullpath_ok: bool = False
    direct_io: bool = False
    kernel_cache: bool = False
    auto_cache: bool = False
    uid: Optional[int] = None
    gid: Optional[int] = None
    umask: Optional[int] = None
    intr: bool = False
    max_write: int = 0
    max_read: int = 0
    max_readahead: int = 0
    max_background: int = 0
    splice_read: Optional[bool] = None
    splice_write: Optional[bool] = None
    splice_move: Optional[bool] = None
    readdirplus: str = "auto"
    writeback_cache: bool = False
    posix_acl: bool = False
    atomic_o_trunc: Optional[bool] = None
    auto_inval_data: Optional[bool] = None
    async_dio: Optional[bool] = None
    parallel_dirops: Optional[bool] = True
    handle_killpriv: Optional[bool] = None
    ioctl_dir: Optional[bool] = None
    export_support: Optional[bool] = None
    cache_symlinks: bool = False
    no_open: bool = False

    def __post_init__(self) -> None:
        for name in ("entry_timeout", "attr_timeout", "negative_timeout"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < math.inf:
                raise ValueError(f"Config.{name} must be a finite number of seconds >= 0, not "
                                 f"{v!r}")
        if self.readdirplus not in ("auto", "always", "off"):
            raise ValueError(f"Config.readdirplus must be 'auto', 'always' or 'off', not "
                             f"{self.readdirplus!r}")


class Lock:
    """A POSIX record lock as passed to :meth:`Operations.lock` (fields of ``struct flock``).

    For ``F_GETLK`` the handler updates it in place to describe a conflicting lock, or sets
    ``type`` to ``fcntl.F_UNLCK`` when there is none.
    """

    __slots__ = ("type", "whence", "start", "len", "pid")

    def __init__(self, type: int, whence: int, start: int, len: int, pid: int) -> None:
        self.type = type
        self.whence = whence
        self.start = start
        self.len = len
        self.pid = pid

    def __repr__(self) -> str:
        return (f"Lock(type={self.type}, whence={self.whence}, start={self.start}, "
                f"len={self.len}, pid={self.pid})")


class FdRange(NamedTuple):
    """Data that lives in a file descriptor, moved by libfuse without passing through Python.

    :meth:`Operations.read` may return ``FdRange(fd, offset)``: the reply is read (or, with
    ``Config(splice_write=True)``, spliced) from ``fd`` at ``offset``, at most ``size`` bytes
    (default: as many as asked; fewer at the end of the file). :meth:`Operations.write_fd`
    returns one to have a write's data copied (or spliced) into ``fd`` at ``offset``. ``fd``
    must stay open until the request is answered (keep it for the life of the open file).
    """

    fd: int
    offset: int = 0
    size: int = -1


class Context(NamedTuple):
    """The process that made the request being served (see :func:`pyfuse.context`).

    ``interrupted`` and ``groups`` are asked when read, about the request being served by the
    handler that reads them: read them inside that handler."""

    uid: int
    gid: int
    pid: int
    umask: int

    @property
    def interrupted(self) -> bool:
        """The kernel has interrupted this request (its caller got a signal and no longer
        waits for the answer): a slow synchronous handler may poll this and give up with
        ``FuseError(EINTR)``. An ``async def`` handler of the inode API is cancelled instead."""
        from ._core.context import interrupted

        return interrupted()

    @property
    def groups(self) -> tuple[int, ...]:
        """The supplementary group ids of the calling process (read from /proc; empty if
        that process has exited)."""
        from ._core.context import groups

        return groups()


class FileInfo(NamedTuple):
    """What :meth:`Operations.open`/``create`` may return instead of a bare ``fh`` int, to set
    per-open flags: bypass the page cache (``direct_io``), keep cached pages from an earlier open
    (``keep_cache``), or mark the file as not seekable (``nonseekable``).

    ``opendir`` may return one too: ``cache_readdir=True`` lets the kernel keep the listing it
    reads and serve the next ``readdir`` of this open directory itself, and with
    ``keep_cache=True`` the next opens' too, until the filesystem calls ``invalidate_inode`` of
    the directory, the directory changes through the mount, or its mtime is seen to change
    (docs/caching.md). On the path API this needs libfuse 3.16 or later (earlier versions'
    high-level API drop the two flags).

    ``fd_backed``: ``fh`` is a file descriptor holding this file's data at the same offsets
    (a passthrough). READ and WRITE on this open file are then served from it in C (``pread``
    into the reply, or splice; ``pwrite`` or splice) and never call :meth:`Operations.read` or
    :meth:`Operations.write`. The fd must stay open until ``release``.

    ``fh`` is an int of 0..2**63-1: bit 63 of the handle the kernel keeps is what marks an
    ``fd_backed`` file in C, so a larger handle (or a negative one) is refused, EIO with one
    logged error naming it. (pyfuse.compat's faces keep all 64 bits for their programs, as
    their originals do; they have no ``fd_backed`` files.)
    """

    fh: int = 0
    direct_io: bool = False
    keep_cache: bool = False
    nonseekable: bool = False
    fd_backed: bool = False
    cache_readdir: bool = False
