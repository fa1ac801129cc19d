"""pyfuse3's value types, as pyfuse3 3.5 defines them: EntryAttributes, FileInfo,
StatvfsData, SetattrFields, RequestContext, FUSEError, ReaddirToken, the NewTypes, and their
conversions to pyfuse's (:class:`pyfuse.Attr`, :class:`pyfuse.lowlevel.Entry`, ...)."""
from __future__ import annotations

import errno as _errno
import os
import stat
import struct
from typing import Any

from ..._core.context import CURRENT as _CURRENT
from ..._core.context import context as _context
from ..._core.convert import ATTR_STRUCT, PackedAttr
from ..._core.stream import TimedBatch
from ...lowlevel import (
    SET_ATIME,
    SET_CTIME,
    SET_GID,
    SET_MODE,
    SET_MTIME,
    SET_SIZE,
    SET_UID,
    Entry,
)
from ...lowlevel._replies import ENTRY_STRUCT
from ...types import Attr, StatVFS
from ...types import FileInfo as _PyfuseFileInfo

__all__ = ["FileHandleT", "FileNameT", "FlagT", "InodeT", "ModeT", "XAttrNameT",
           "EntryAttributes", "FileInfo", "StatvfsData", "SetattrFields", "RequestContext",
           "FUSEError", "ReaddirToken", "to_entry", "to_attr", "packed_attr", "from_attr",
           "to_fileinfo", "to_statvfs", "setattr_fields", "request_context",
           "LazyRequestContext", "pack_entry_into", "serve_entries"]

#: pyfuse3 3.5's type aliases (plain aliases there too: ``FileHandleT(x)`` is ``int(x)``).
FileHandleT = int
FileNameT = bytes
FlagT = int
InodeT = int
ModeT = int
XAttrNameT = bytes

_STAT_FIELDS = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_rdev", "st_size",
                "st_blksize", "st_blocks", "st_atime_ns", "st_ctime_ns", "st_mtime_ns",
                "st_birthtime_ns")


class EntryAttributes:
    """Attributes of a directory entry (pyfuse3's): the ``stat`` fields with nanosecond
    times, ``st_ino``, ``generation`` and the two timeouts (300 s by default, as
    pyfuse3's)."""

    __slots__ = ("st_ino", "generation", "entry_timeout", "attr_timeout", *_STAT_FIELDS)

    def __init__(self) -> None:
        self.st_ino = 0
        self.generation = 0
        self.entry_timeout: float = 300
        self.attr_timeout: float = 300
        self.st_mode = stat.S_IFREG
        self.st_nlink = 1
        self.st_uid = self.st_gid = self.st_rdev = self.st_size = self.st_blocks = 0
        self.st_blksize = 4096
        self.st_atime_ns = self.st_ctime_ns = self.st_mtime_ns = self.st_birthtime_ns = 0

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, v)

    def __copy__(self) -> EntryAttributes:
        new = EntryAttributes()
        new.__setstate__(self.__getstate__())
        return new

    def __repr__(self) -> str:
        return f"EntryAttributes(st_ino={self.st_ino}, st_mode={self.st_mode:#o}, " \
               f"st_size={self.st_size})"


class FileInfo:
    """What open and create return: the file handle and the per-open flags."""

    __slots__ = ("fh", "direct_io", "keep_cache", "nonseekable")

    def __init__(self, fh: int = 0, direct_io: bool = False, keep_cache: bool = True,
                 nonseekable: bool = False) -> None:
        self.fh, self.direct_io = fh, direct_io
        self.keep_cache, self.nonseekable = keep_cache, nonseekable


class StatvfsData:
    """What statfs returns."""

    __slots__ = ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files",
                 "f_ffree", "f_favail", "f_namemax")
    f_bsize: int
    f_frsize: int
    f_blocks: int
    f_bfree: int
    f_bavail: int
    f_files: int
    f_ffree: int
    f_favail: int
    f_namemax: int

    def __init__(self) -> None:
        for k in self.__slots__:
            setattr(self, k, 0)

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, v)

    def __copy__(self) -> StatvfsData:
        new = StatvfsData()
        new.__setstate__(self.__getstate__())
        return new


class _Unpicklable:
    __slots__ = ()

    def __getstate__(self) -> None:
        from pickle import PicklingError

        raise PicklingError(f"{type(self).__name__} instances can't be pickled")

    def __reduce_ex__(self, protocol: Any) -> Any:
        self.__getstate__()


class SetattrFields(_Unpicklable):
    """Which fields a setattr changes."""

    __slots__ = ("update_atime", "update_mtime", "update_ctime", "update_mode", "update_uid",
                 "update_gid", "update_size")
    update_atime: bool
    update_mtime: bool
    update_ctime: bool
    update_mode: bool
    update_uid: bool
    update_gid: bool
    update_size: bool

    def __init__(self) -> None:
        for k in self.__slots__:
            setattr(self, k, False)


class RequestContext(_Unpicklable):
    """The caller of a request: uid, gid, pid, umask."""

    __slots__ = ("uid", "gid", "pid", "umask")

    def __init__(self, uid: int = 0, gid: int = 0, pid: int = 0, umask: int = 0) -> None:
        self.uid, self.gid, self.pid, self.umask = uid, gid, pid, umask


class FUSEError(Exception):
    """``raise FUSEError(errno.ENOENT)``: the errno the caller sees."""

    def __init__(self, errno: int) -> None:  # noqa: A002 (pyfuse3's parameter name)
        super().__init__(errno)
        self._errno = errno

    @property
    def errno(self) -> int:
        return self._errno

    @property
    def errno_(self) -> int:
        return self._errno

    def __str__(self) -> str:
        return os.strerror(self._errno)

    def __reduce__(self) -> Any:
        return (FUSEError, (self._errno,))


class ReaddirToken:
    """Where readdir_reply puts a listing's entries (pyfuse3's token), and the lowest
    timeouts of their EntryAttributes (``entry_timeout``, ``attr_timeout``; None: none yet),
    which the listing's entries get."""

    __slots__ = ("entries", "room", "entry_timeout", "attr_timeout")

    def __init__(self, room: int) -> None:
        self.entries: list[tuple[bytes, Any, int]] = []
        self.room = room
        self.entry_timeout: Any = None
        self.attr_timeout: Any = None

    def timeouts(self, et: Any, at: Any) -> None:
        """An entry with these timeouts was added."""
        if self.entry_timeout is None:
            self.entry_timeout, self.attr_timeout = et, at
        else:
            self.entry_timeout = _lowest(self.entry_timeout, et)
            self.attr_timeout = _lowest(self.attr_timeout, at)

    def batch(self) -> Any:
        """The entries as a batch for pyfuse's readdir engine, with their timeouts (a
        timeout that is not a finite number >= 0 counts as 0: nothing cached)."""
        return TimedBatch(self.entries, _valid(self.entry_timeout),
                          _valid(self.attr_timeout))


def _lowest(a: Any, b: Any) -> Any:
    try:
        return b if b < a else a
    except TypeError:
        return None  # not numbers: _valid makes it 0


def _valid(t: Any) -> float:
    return float(t) if isinstance(t, (int, float)) and 0 <= t < float("inf") else 0.0


class LazyRequestContext(RequestContext):
    """The ``ctx`` a handler is given: the caller's ids, fetched when first read (most
    handlers never read theirs). ``request``: an async request (``pyfuse.context()``'s), whose
    ids stay readable after its reply; None, or made with ``object.__new__`` (no ``__init__``
    call, as the llfuse adapter does): the request this thread is serving (a synchronous
    handler's, read while it runs). Whoever hands one out fetches it before the reply if the
    handler kept it unread (:meth:`fetch`)."""

    __slots__ = ("_request", "_ids", "__weakref__")
    _request: Any
    _ids: Any

    def __init__(self, request: Any = None) -> None:  # noqa: D107 (fields: properties)
        self._request = request

    def fetch(self) -> Any:
        """The caller's ids (a :class:`pyfuse.Context`), fetched once (``_ids`` unset or None:
        not yet; the llfuse adapter sets it None to hand the object out again)."""
        try:
            c = self._ids
        except AttributeError:
            c = None
        if c is None:
            r = getattr(self, "_request", None)
            c = self._ids = r.ctx if r is not None else _context()
        return c

    uid = property(lambda self: self.fetch().uid)  # type: ignore[assignment]
    gid = property(lambda self: self.fetch().gid)  # type: ignore[assignment]
    pid = property(lambda self: self.fetch().pid)  # type: ignore[assignment]
    umask = property(lambda self: self.fetch().umask)  # type: ignore[assignment]


def request_context() -> RequestContext:
    """The caller of the request being served, as pyfuse3's and llfuse's ``ctx``: an async
    handler's is lazy (its Request fetches it before the reply if it is still held), a
    synchronous one's fetched now."""
    p = _CURRENT.get()
    if p is not None:
        ctx = _new(LazyRequestContext)  # (__init__'s one assignment, without its frame)
        ctx._request = p
        p.ctx_view = ctx
        return ctx
    c = _context()
    return RequestContext(c.uid, c.gid, c.pid, c.umask)


def to_attr(a: EntryAttributes) -> Attr:
    # times as ints: a program may have set a float (llfuse's C struct truncated it)
    return Attr(a.st_mode, a.st_ino, a.st_nlink, a.st_uid, a.st_gid, a.st_size, a.st_blocks,
                a.st_rdev, a.st_blksize, int(a.st_atime_ns), int(a.st_mtime_ns),
                int(a.st_ctime_ns))


def packed_attr(a: EntryAttributes) -> Any:
    """``a``'s attributes for pyfuse's replies and listings: packed at once (the usual case,
    int fields), else (float times, converted; or a bad value, which the reply reports) as
    :func:`to_attr`'s Attr."""
    try:
        return PackedAttr(_pack_attr(
            a.st_mode, a.st_ino, a.st_nlink, a.st_uid, a.st_gid, a.st_size, a.st_blocks,
            a.st_rdev, a.st_blksize, a.st_atime_ns, a.st_mtime_ns, a.st_ctime_ns))
    except struct.error:
        return to_attr(a)


def to_entry(a: Any, what: str) -> Entry | bytes:
    """The reply of the EntryAttributes ``a`` that ``what`` returned: a packed entry
    (pyfuse.lowlevel._replies.ENTRY_STRUCT, replied as it is by the session of a compat face),
    else (a value the packing refuses: float times, which are converted; NaN, infinite or
    negative timeouts; a bad value) an Entry the general reply converts, or refuses naming
    the bad value."""
    if type(a) is not EntryAttributes and not isinstance(a, EntryAttributes):
        raise TypeError(f"{what} must return an EntryAttributes, not {type(a).__name__}")
    et, at = a.entry_timeout, a.attr_timeout
    try:
        if 0.0 <= et < _INF and 0.0 <= at < _INF:  # (NaN fails, a non-number raises)
            return _pack_entry(  # type: ignore[no-any-return]
                a.st_mode, a.st_ino, a.st_nlink, a.st_uid, a.st_gid, a.st_size, a.st_blocks,
                a.st_rdev, a.st_blksize, a.st_atime_ns, a.st_mtime_ns, a.st_ctime_ns,
                a.generation, et, at)
    except (TypeError, struct.error):
        pass
    return Entry(to_attr(a), a.generation, et, at)


def from_attr(a: Attr) -> EntryAttributes:
    e = EntryAttributes()
    e.st_ino, e.st_mode, e.st_nlink, e.st_uid, e.st_gid = a.ino, a.mode, a.nlink, a.uid, a.gid
    e.st_size, e.st_blocks, e.st_rdev, e.st_blksize = a.size, a.blocks, a.rdev, a.blksize
    e.st_atime_ns, e.st_mtime_ns, e.st_ctime_ns = a.atime_ns, a.mtime_ns, a.ctime_ns
    return e


def to_fileinfo(fi: Any, what: str) -> _PyfuseFileInfo:
    if isinstance(fi, FileInfo):
        return _PyfuseFileInfo(int(fi.fh), bool(fi.direct_io), bool(fi.keep_cache),
                               bool(fi.nonseekable))
    raise TypeError(f"{what} must return a pyfuse3.FileInfo, not {type(fi).__name__}")


def to_statvfs(v: Any) -> StatVFS:
    if not isinstance(v, StatvfsData):
        raise TypeError(f"statfs must return a StatvfsData, not {type(v).__name__}")
    return StatVFS(v.f_bsize, v.f_frsize, v.f_blocks, v.f_bfree, v.f_bavail, v.f_files,
                   v.f_ffree, v.f_favail, 0, 0, v.f_namemax)


def setattr_fields(to_set: int) -> SetattrFields:
    f = SetattrFields()
    f.update_mode = bool(to_set & SET_MODE)
    f.update_uid = bool(to_set & SET_UID)
    f.update_gid = bool(to_set & SET_GID)
    f.update_size = bool(to_set & SET_SIZE)
    f.update_atime = bool(to_set & SET_ATIME)
    f.update_mtime = bool(to_set & SET_MTIME)
    f.update_ctime = bool(to_set & SET_CTIME)
    return f


ENOATTR = _errno.ENODATA
_pack_attr = ATTR_STRUCT.pack
_pack_entry = ENTRY_STRUCT.pack
_INF = float("inf")
_pack_entry_into = ENTRY_STRUCT.pack_into
_new = object.__new__


def pack_entry_into(buf: Any, a: EntryAttributes) -> None:
    """``a``'s values packed into ``buf`` as ENTRY_STRUCT, unchecked but for the packing's own
    refusals (struct.error: a float, a value out of its field's range): what a session given
    :func:`serve_entries` does with a returned EntryAttributes. (The attribute reads are the
    frame's bytecode: an ``operator.attrgetter`` of the fifteen costs more, a generic look-up
    each.)"""
    _pack_entry_into(buf, 0, a.st_mode, a.st_ino, a.st_nlink, a.st_uid, a.st_gid, a.st_size,
                     a.st_blocks, a.st_rdev, a.st_blksize, a.st_atime_ns, a.st_mtime_ns,
                     a.st_ctime_ns, a.generation, a.entry_timeout, a.attr_timeout)


def _convert(a: EntryAttributes) -> Entry | bytes:
    """An EntryAttributes the packing refused, as the general reply takes it."""
    return to_entry(a, "the handler")


def serve_entries(session: Any) -> None:
    """Let ``session``'s synchronous handlers return EntryAttributes objects as they are:
    the callback packs one straight into the thread's out struct (:func:`pack_entry_into`;
    C checks its timeouts and attributes), and one the packing refuses (float times, a bad
    value) goes through :func:`to_entry` (converted, or refused by name). Packed entries
    (``bytes``, what to_entry gives) are allowed too."""
    session._packed = True
    session._foreign = EntryAttributes
    session._pack_foreign = pack_entry_into
    session._convert = _convert
