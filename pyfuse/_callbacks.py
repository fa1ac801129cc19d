"""Every C-to-Python entry point (``extern "Python+C"`` in csrc/callbacks_cdef.h).

Each callback finds its :class:`~pyfuse.session.Session` from the handle, decodes the arguments,
calls the filesystem's method, converts the result into the C output arguments and returns 0 or a
negative errno. Exceptions follow :mod:`pyfuse.errors` through ``Session.fail``; the ``onerror``
hook catches whatever escapes (it must: cffi would otherwise return 0, i.e. success).
"""
from __future__ import annotations

import errno
import logging
import sys
import time
from array import array
from itertools import islice
from typing import Any, Optional

from ._pyfuse_c import ffi, lib
from .errors import BadReturn
from .types import (
    ATTR_STRUCT,
    NO_ATTR,
    STATVFS_STRUCT,
    DirEntry,
    FdRange,
    FileInfo,
    Lock,
    pack_attr,
    pack_statvfs,
)

log = logging.getLogger("pyfuse")

_ENC = sys.getfilesystemencoding()
_from_handle = ffi.from_handle
_string = ffi.string
_memmove = ffi.memmove
_buffer = ffi.buffer
_ATTR_SIZE = ATTR_STRUCT.size
_OFF_SIZE = array("q").itemsize  # the offsets handed to C: int64_t
_EIO = -errno.EIO

#: Most entries pulled from a readdir iterator (or sliced from its list) per batch handed to C.
#: Bounds the memory a listing holds; the C filler stops at the kernel's buffer size and the rest
#: stays packed for the next request.
READDIR_BATCH = 512


def _onerror(exception: Any, exc_value: Any, traceback: Any) -> Optional[int]:
    log.error("internal error in a pyfuse callback; replying EIO",
              exc_info=(exception, exc_value, traceback))
    return _EIO


def _void_onerror(exception: Any, exc_value: Any, traceback: Any) -> None:
    log.error("internal error in a pyfuse callback", exc_info=(exception, exc_value, traceback))


def _path(p: Any) -> Optional[str]:
    return _string(p).decode(_ENC, "surrogateescape") if p else None


def _fh(fh: int, has_fh: int) -> Optional[int]:
    return fh if has_fh else None


def _encode(s: Any, what: str) -> bytes:
    if isinstance(s, str):
        return s.encode(_ENC, "surrogateescape")
    if isinstance(s, (bytes, bytearray)):
        return bytes(s)
    raise BadReturn(f"{what} must return str or bytes, not {type(s).__name__}")


def _copy_out(data: Any, buf: Any, size: int, what: str) -> int:
    """Copy a bytes-like result into a C buffer of ``size`` bytes; return the byte count.

    bytes, bytearray and memoryview are copied straight from their buffer (no intermediate
    object); other buffer-protocol objects through one memoryview."""
    t = type(data)
    if t is bytes or t is bytearray:
        n = len(data)
    elif t is memoryview:
        n = data.nbytes
    else:
        try:
            data = memoryview(data)
        except TypeError:
            raise BadReturn(f"{what} must return a bytes-like object, not "
                            f"{t.__name__}") from None
        n = data.nbytes
    if n > size:
        raise BadReturn(f"{what} returned {n} bytes, more than the {size} asked for")
    if n:
        _memmove(buf, data, n)
    return n


# ---------------------------------------------------------------------------------------------
# life cycle, logging


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_init(h):
    s = _from_handle(h)
    try:
        s.ops.init()
    except BaseException as e:
        return s.fail(e, "init")
    return 0


@ffi.def_extern(onerror=_void_onerror)
def pyfuse_cb_destroy(h):
    s = _from_handle(h)
    try:
        s.ops.destroy()
    except BaseException as e:
        s.fail(e, "destroy")


_LEVELS = [logging.CRITICAL, logging.CRITICAL, logging.CRITICAL, logging.ERROR, logging.WARNING,
           logging.INFO, logging.INFO, logging.DEBUG]


@ffi.def_extern(onerror=_void_onerror)
def pyfuse_cb_log(level, msg):
    source = "libfuse"
    if level >= 100:  # from the shim itself (PYFUSE_LOG_SHIM)
        level -= 100
        source = "shim"
    lvl = _LEVELS[level] if 0 <= level < len(_LEVELS) else logging.INFO
    if log.isEnabledFor(lvl):
        log.log(lvl, "%s: %s", source, _string(msg).decode("utf-8", "replace"))


# ---------------------------------------------------------------------------------------------
# attributes and names


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_getattr(h, path, out, fh, has_fh):
    s = _from_handle(h)
    try:
        a = s.op_getattr(_path(path), fh if has_fh else None)
        try:
            packed = pack_attr(a)
        except Exception as e:
            raise BadReturn(f"getattr returned an invalid attribute object: {e}") from None
    except BaseException as e:
        return s.fail(e, "getattr")
    _memmove(out, packed, _ATTR_SIZE)
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_readlink(h, path, buf, size):
    s = _from_handle(h)
    try:
        target = _encode(s.op_readlink(_path(path)), "readlink")
    except BaseException as e:
        return s.fail(e, "readlink")
    n = min(len(target), size - 1)  # libfuse wants it NUL-terminated, truncated if needed
    _memmove(buf, target, n)
    buf[n] = b"\0"
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_mknod(h, path, mode, rdev):
    s = _from_handle(h)
    try:
        s.op_mknod(_path(path), mode, rdev)
    except BaseException as e:
        return s.fail(e, "mknod")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_mkdir(h, path, mode):
    s = _from_handle(h)
    try:
        s.op_mkdir(_path(path), mode)
    except BaseException as e:
        return s.fail(e, "mkdir")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_unlink(h, path):
    s = _from_handle(h)
    try:
        s.op_unlink(_path(path))
    except BaseException as e:
        return s.fail(e, "unlink")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_rmdir(h, path):
    s = _from_handle(h)
    try:
        s.op_rmdir(_path(path))
    except BaseException as e:
        return s.fail(e, "rmdir")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_symlink(h, target, path):
    s = _from_handle(h)
    try:
        s.op_symlink(_path(target), _path(path))
    except BaseException as e:
        return s.fail(e, "symlink")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_rename(h, old, new, flags):
    s = _from_handle(h)
    try:
        s.op_rename(_path(old), _path(new), flags)
    except BaseException as e:
        return s.fail(e, "rename")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_link(h, old, new):
    s = _from_handle(h)
    try:
        s.op_link(_path(old), _path(new))
    except BaseException as e:
        return s.fail(e, "link")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_chmod(h, path, mode, fh, has_fh):
    s = _from_handle(h)
    try:
        s.op_chmod(_path(path), mode, _fh(fh, has_fh))
    except BaseException as e:
        return s.fail(e, "chmod")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_chown(h, path, uid, gid, fh, has_fh):
    s = _from_handle(h)
    try:
        s.op_chown(_path(path), uid, gid, _fh(fh, has_fh))
    except BaseException as e:
        return s.fail(e, "chown")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_truncate(h, path, size, fh, has_fh):
    s = _from_handle(h)
    try:
        s.op_truncate(_path(path), size, _fh(fh, has_fh))
    except BaseException as e:
        return s.fail(e, "truncate")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_utimens(h, path, atime_ns, mtime_ns, which, fh, has_fh):
    s = _from_handle(h)
    if which:
        now = time.time_ns()
        if which & lib.PYFUSE_ATIME_OMIT:
            atime_ns = None
        elif which & lib.PYFUSE_ATIME_NOW:
            atime_ns = now
        if which & lib.PYFUSE_MTIME_OMIT:
            mtime_ns = None
        elif which & lib.PYFUSE_MTIME_NOW:
            mtime_ns = now
    try:
        s.op_utimens(_path(path), atime_ns, mtime_ns, _fh(fh, has_fh))
    except BaseException as e:
        return s.fail(e, "utimens")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_access(h, path, mask):
    s = _from_handle(h)
    try:
        s.op_access(_path(path), mask)
    except BaseException as e:
        return s.fail(e, "access")
    return 0


# ---------------------------------------------------------------------------------------------
# files


def _open_result(r: Any, o: Any, what: str) -> None:
    if r is None:
        return
    if type(r) is int:
        o.fh = r
    elif isinstance(r, FileInfo):
        if r.fd_backed and not (type(r.fh) is int and 0 <= r.fh < 1 << 31):
            raise BadReturn(f"{what}: an fd_backed FileInfo needs a file descriptor as fh, "
                            f"not {r.fh!r}")
        o.fh = r.fh
        o.direct_io = r.direct_io
        o.keep_cache = r.keep_cache
        o.nonseekable = r.nonseekable
        o.fd_backed = r.fd_backed
    else:
        raise BadReturn(f"{what} must return an int file handle, a FileInfo or None, "
                        f"not {type(r).__name__}")


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_open(h, path, o):
    s = _from_handle(h)
    try:
        _open_result(s.op_open(_path(path), o.flags), o, "open")
    except BaseException as e:
        return s.fail(e, "open")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_create(h, path, mode, o):
    s = _from_handle(h)
    try:
        _open_result(s.op_create(_path(path), mode, o.flags), o, "create")
    except BaseException as e:
        return s.fail(e, "create")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_read(h, path, buf, size, off, fh, fdr):
    s = _from_handle(h)
    try:
        data = s.op_read(_path(path), size, off, fh)
        if type(data) is FdRange:
            _fd_range(data, fdr, "read")
            return 0
        return _copy_out(data, buf, size, "read")
    except BaseException as e:
        return s.fail(e, "read")


def _fd_range(r: Any, fdr: Any, what: str) -> None:
    fd, pos, size = r
    if type(fd) is not int or fd < 0 or type(pos) is not int or pos < 0 or type(size) is not int:
        raise BadReturn(f"{what}: invalid {r!r}")
    fdr.fd = fd
    fdr.pos = pos
    fdr.size = size if size >= 0 else 1 << 62


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_write_fd(h, path, size, off, fh, fdr):
    s = _from_handle(h)
    try:
        r = s.op_write_fd(_path(path), size, off, fh)
        if r is not None:
            if type(r) is not FdRange:
                raise BadReturn(f"write_fd must return a FdRange or None, not {type(r).__name__}")
            _fd_range(r, fdr, "write_fd")
    except BaseException as e:
        return s.fail(e, "write_fd")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_write(h, path, buf, size, off, fh):
    s = _from_handle(h)
    try:
        n = s.op_write(_path(path), memoryview(_buffer(buf, size)).toreadonly(), off, fh)
        if type(n) is not int or not 0 <= n <= size:
            raise BadReturn(f"write must return the number of bytes written (0..{size}), "
                            f"not {n!r}")
    except BaseException as e:
        return s.fail(e, "write")
    return n


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_statfs(h, path, out):
    s = _from_handle(h)
    try:
        v = s.op_statfs(_path(path))
        try:
            packed = pack_statvfs(v)
        except Exception as e:
            raise BadReturn(f"statfs returned an invalid object: {e}") from None
    except BaseException as e:
        return s.fail(e, "statfs")
    _memmove(out, packed, STATVFS_STRUCT.size)
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_flush(h, path, fh):
    s = _from_handle(h)
    try:
        s.op_flush(_path(path), fh)
    except BaseException as e:
        return s.fail(e, "flush")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_release(h, path, fh, flags):
    s = _from_handle(h)
    try:
        s.op_release(_path(path), fh)
    except BaseException as e:
        return s.fail(e, "release")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_fsync(h, path, datasync, fh):
    s = _from_handle(h)
    try:
        s.op_fsync(_path(path), bool(datasync), fh)
    except BaseException as e:
        return s.fail(e, "fsync")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_fallocate(h, path, mode, off, length, fh):
    s = _from_handle(h)
    try:
        s.op_fallocate(_path(path), mode, off, length, fh)
    except BaseException as e:
        return s.fail(e, "fallocate")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_copy_file_range(h, path_in, fh_in, off_in, path_out, fh_out, off_out, size, flags):
    s = _from_handle(h)
    try:
        n = s.op_copy_file_range(_path(path_in), fh_in, off_in, _path(path_out), fh_out, off_out,
                                 size, flags)
        if type(n) is not int or not 0 <= n <= size:
            raise BadReturn(f"copy_file_range must return the bytes copied (0..{size}), "
                            f"not {n!r}")
    except BaseException as e:
        return s.fail(e, "copy_file_range")
    return n


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_lseek(h, path, off, whence, fh):
    s = _from_handle(h)
    try:
        r = s.op_lseek(_path(path), off, whence, fh)
        if type(r) is not int or r < 0:
            raise BadReturn(f"lseek must return a non-negative offset, not {r!r}")
    except BaseException as e:
        return s.fail(e, "lseek")
    return r


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_lock(h, path, fh, cmd, lk):
    s = _from_handle(h)
    lock = Lock(lk.type, lk.whence, lk.start, lk.len, lk.pid)
    try:
        s.op_lock(_path(path), fh, cmd, lock)
    except BaseException as e:
        return s.fail(e, "lock")
    lk.type, lk.whence, lk.start, lk.len, lk.pid = (lock.type, lock.whence, lock.start, lock.len,
                                                    lock.pid)
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_flock(h, path, fh, op):
    s = _from_handle(h)
    try:
        s.op_flock(_path(path), fh, op)
    except BaseException as e:
        return s.fail(e, "flock")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_ioctl(h, path, cmd, arg, fh, flags, data, in_size, out_size):
    s = _from_handle(h)
    try:
        inp = _buffer(data, in_size)[:] if in_size else None
        r = s.op_ioctl(_path(path), cmd, arg, fh, flags, inp, out_size)
        if r is None:
            return 0
        if type(r) is int:
            return r
        _copy_out(r, data, out_size, "ioctl")
    except BaseException as e:
        return s.fail(e, "ioctl")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_poll(h, path, fh, revents):
    s = _from_handle(h)
    try:
        r = s.op_poll(_path(path), fh)
        if type(r) is not int or r < 0:
            raise BadReturn(f"poll must return an event mask, not {r!r}")
    except BaseException as e:
        return s.fail(e, "poll")
    revents[0] = r
    return 0


# ---------------------------------------------------------------------------------------------
# extended attributes


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_setxattr(h, path, name, value, size, flags):
    s = _from_handle(h)
    try:
        s.op_setxattr(_path(path), _path(name), _buffer(value, size)[:], flags)
    except BaseException as e:
        return s.fail(e, "setxattr")
    return 0


def _sized_reply(data: bytes, buf: Any, size: int) -> int:
    """The xattr size protocol: size 0 asks for the length, a short buffer is ERANGE."""
    n = len(data)
    if size == 0:
        return n
    if n > size:
        return -errno.ERANGE
    _memmove(buf, data, n)
    return n


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_getxattr(h, path, name, value, size):
    s = _from_handle(h)
    try:
        v = s.op_getxattr(_path(path), _path(name))
        if not isinstance(v, (bytes, bytearray, memoryview)):
            raise BadReturn(f"getxattr must return bytes, not {type(v).__name__}")
    except BaseException as e:
        return s.fail(e, "getxattr")
    return _sized_reply(bytes(v), value, size)


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_listxattr(h, path, buf, size):
    s = _from_handle(h)
    try:
        names = [_encode(n, "listxattr") for n in s.op_listxattr(_path(path))]
    except BaseException as e:
        return s.fail(e, "listxattr")
    return _sized_reply(b"".join(n + b"\0" for n in names), buf, size)


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_removexattr(h, path, name):
    s = _from_handle(h)
    try:
        s.op_removexattr(_path(path), _path(name))
    except BaseException as e:
        return s.fail(e, "removexattr")
    return 0


# ---------------------------------------------------------------------------------------------
# directories


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_opendir(h, path, fh):
    s = _from_handle(h)
    try:
        r = s.op_opendir(_path(path))
        if r is not None and type(r) is not int:
            raise BadReturn(f"opendir must return an int handle or None, not {type(r).__name__}")
    except BaseException as e:
        return s.fail(e, "opendir")
    fh[0] = r or 0
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_fsyncdir(h, path, datasync, fh):
    s = _from_handle(h)
    try:
        s.op_fsyncdir(_path(path), bool(datasync), fh)
    except BaseException as e:
        return s.fail(e, "fsyncdir")
    return 0


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_releasedir(h, path, d):
    s = _from_handle(h)
    if d.key:
        s.dir_streams.pop(d.key).close()
        d.key = 0
    if s.op_releasedir is not None:
        try:
            s.op_releasedir(_path(path), d.fh)
        except BaseException as e:
            return s.fail(e, "releasedir")
    return 0


class DirStream:
    """A listing in progress, kept between READDIR requests of one open directory.

    Entries come from the filesystem's list or tuple ``buf`` (sliced a batch at a time from
    ``idx``, never copied whole) or from its iterator ``it`` (``None`` once exhausted, or for a
    list). ``left`` is the packed rest of a batch that the last kernel buffer did not take.
    """

    __slots__ = ("it", "buf", "idx", "left", "cap", "next_off", "pos", "error")

    def __init__(self, it: Any, buf: Any = ()) -> None:
        self.it = it
        self.buf = buf
        self.idx = 0
        self.left: Optional[_Batch] = None
        self.cap = 0           # entries the last full kernel buffer took: the next one's size
        self.next_off = 0      # the request offset that continues this stream
        self.pos = 0           # positional mode: entries handed to the kernel so far
        self.error = 0         # errno raised after some entries, reported on the next request

    def close(self) -> None:
        close = getattr(self.it, "close", None)
        self.it = None
        self.buf = ()
        self.left = None
        if close is not None:
            try:
                close()  # runs a generator's finally: blocks
            except Exception:
                log.exception("closing a readdir iterator raised")


class _Batch:
    """Entries packed for ``lib.pyfuse_fill``: names (and their NUL-separated encoding), packed
    attributes with their stride (0: one shared), offsets (``None``: positional)."""

    __slots__ = ("names", "blob", "attrs", "stride", "offs", "offs_c")

    def __init__(self, names: Any, blob: bytes, attrs: Any, stride: int, offs: Any,
                 offs_c: Any) -> None:
        self.names, self.blob, self.attrs, self.stride = names, blob, attrs, stride
        self.offs, self.offs_c = offs, offs_c

    def rest(self, k: int) -> _Batch:
        """The entries from k on, still packed (the names are joined again: C speed)."""
        names = self.names[k:]
        return _Batch(names, _join(names),
                      self.attrs[k * self.stride:] if self.stride else self.attrs, self.stride,
                      None if self.offs is None else self.offs[k:],
                      self.offs_c if self.offs is None else self.offs_c[k * _OFF_SIZE:])


_ONLY_DIRENTRY, _ONLY_TUPLE = {DirEntry}, {tuple}


def _split(batch: list[Any]) -> tuple[Any, bytes, Any, Any]:
    """(names, their NUL-separated encoding, attrs, offsets) of a batch of entries.

    The common batches (all names, or all DirEntry objects, or all (name, attr[, offset])
    tuples of one length) are split at C speed: one pass for the types, one ``zip``; names
    that are not str, attrs that do not pack and offsets that are not integers are caught later
    by the join, the packing and the array.
    """
    t = type(batch[0])
    if t is str:
        try:
            return batch, "\0".join(batch).encode(_ENC, "surrogateescape"), None, None
        except TypeError:
            pass  # not only names: normalise below
    elif t is DirEntry or t is tuple:
        types = set(map(type, batch))
        if types == _ONLY_DIRENTRY or types == _ONLY_TUPLE:
            try:  # one pass transposes the batch into its columns
                cols = tuple(zip(*batch, strict=True))
            except ValueError:
                cols = ()  # tuples of different lengths
            if len(cols) == 3:
                return cols[0], _join(cols[0]), cols[1], cols[2]
            if len(cols) == 2:
                return cols[0], _join(cols[0]), cols[1], None
    norm = []
    for e in batch:
        if isinstance(e, str):
            norm.append(DirEntry(e))
        elif isinstance(e, DirEntry):
            norm.append(e)
        elif type(e) is tuple and len(e) in (2, 3):
            norm.append(DirEntry(*e))
        elif isinstance(e, (bytes, bytearray)):
            norm.append(DirEntry(bytes(e).decode(_ENC, "surrogateescape")))
        else:
            raise BadReturn(f"readdir must yield str, DirEntry or (name, attr[, offset]) "
                            f"tuples, not {type(e).__name__}")
    names, attrs, offs = zip(*norm)
    return names, _join(names), attrs, offs


def _join(names: Any) -> bytes:
    try:
        return "\0".join(names).encode(_ENC, "surrogateescape")
    except TypeError:
        raise BadReturn("readdir entry names must be str") from None


def _pack_attrs(attrs: Any) -> tuple[Any, int]:
    """The packed attributes of a batch and their stride: (NULL, 0) when no entry has any, one
    packed attribute with stride 0 when all entries share one object (or equal ones)."""
    a0 = attrs[0]
    # One shared template (or equal ones), or all None. Tuple equality tests identity first, in
    # C, and stops at the first difference (one Attr.__eq__ call at most).
    if a0 is attrs[-1] and attrs == (a0,) * len(attrs):
        return (ffi.NULL, 0) if a0 is None else (pack_attr(a0), 0)
    memo: dict[int, bytes] = {}  # entries often share a few Attr objects: pack each once
    out = []
    for a in attrs:
        r = memo.get(id(a))
        if r is None:
            r = memo[id(a)] = NO_ATTR if a is None else pack_attr(a)
        out.append(r)
    return b"".join(out), _ATTR_SIZE


_FILL_ERRORS = {
    errno.EINVAL: "readdir yielded an invalid name: empty, or containing '/' or NUL",
    errno.ENAMETOOLONG: "readdir yielded a name longer than 255 bytes",
    errno.EEXIST: "readdir yielded the same name twice",
    errno.EBADMSG: "readdir yielded an attr whose mode has no valid file type",
}


def _pack(d: Any, batch: list[Any]) -> _Batch:
    """Pack a batch of entries for C, checking that the listing keeps to one offset mode."""
    names, blob, attrs, offs = _split(batch)
    if offs is None or not any(offs):
        offs_c = ffi.NULL
        mode = 1
    elif 0 in offs:
        raise BadReturn("readdir mixed entries with offset 0 and entries with offsets; "
                        "give every entry an offset, or none")
    else:
        if min(offs) < 0:
            raise BadReturn("readdir yielded a negative offset")
        offs_c = array("q", offs).tobytes()
        mode = 2
    if d.mode != mode:
        if d.mode != 0:
            raise BadReturn("readdir changed between positional entries (offset 0) and "
                            "entries with offsets within one listing")
        d.mode = mode
    try:
        attrs_c, stride = (ffi.NULL, 0) if attrs is None else _pack_attrs(attrs)
    except Exception as e:
        raise BadReturn(f"readdir yielded an invalid attr: {e}") from None
    return _Batch(names, blob, attrs_c, stride, None if mode == 1 else offs, offs_c)


def _fill(fill: Any, st: DirStream, b: _Batch) -> int:
    """Hand a packed batch to C; returns how many entries the kernel buffer took. The rest, if
    any, is kept packed in ``st.left`` for the next request."""
    n = len(b.names)
    k = lib.pyfuse_fill(fill, b.blob, len(b.blob), n, b.offs_c, b.attrs, b.stride, st.pos)
    if k < 0:
        raise BadReturn(_FILL_ERRORS.get(-k, "readdir: invalid batch"))
    if k:
        st.pos += k
        st.next_off = st.pos if b.offs is None else b.offs[k - 1]
    if k < n:
        st.left = b.rest(k)
    return k


@ffi.def_extern(onerror=_onerror)
def pyfuse_cb_readdir(h, path, off, d, fill, plus):
    s = _from_handle(h)
    s.readdir_requests += 1
    streams = s.dir_streams
    st = streams.pop(d.key, None) if d.key else None
    d.key = 0
    if st is not None and st.next_off != off:
        st.close()  # a seek (rewinddir/seekdir): start over
        st = None
    if st is not None and st.error and st.left is None:
        st.close()  # everything before the error has been handed out: now report it
        return -st.error
    sent = 0
    try:
        if st is None:
            positional = d.mode != 2
            r = s.op_readdir(_path(path), 0 if positional else off, d.fh, bool(plus))
            # A list or tuple is served by slicing it: no iterator to step through entry by entry
            st = DirStream(None, r) if type(r) is list or type(r) is tuple else DirStream(iter(r))
            if off and positional:  # resume a positional listing after a restart
                if st.it is None:
                    st.idx = skipped = min(off, len(r))
                else:
                    skipped = sum(1 for _ in islice(st.it, off))
                st.pos = st.next_off = skipped
        while True:
            b, st.left = st.left, None
            err = None
            if b is None:
                # Pull no more than the kernel buffer is likely to take (as many entries as the
                # last full one), then probe with one entry: a batch packed in vain costs as
                # much as one handed out.
                room = st.cap - sent
                size = (min(READDIR_BATCH, room) or 1) if room >= 0 and st.cap else READDIR_BATCH
                if st.it is None:
                    batch = st.buf[st.idx:st.idx + size]
                    st.idx += len(batch)
                else:
                    batch = []
                    try:  # on an exception, what the iterator yielded before it stays in batch
                        batch.extend(islice(st.it, size))
                    except Exception as e:
                        err = e
                        st.it = None
                    else:
                        if len(batch) < size:
                            st.it = None  # exhausted
                if batch:
                    b = _pack(d, batch)
            if b is not None:
                sent += _fill(fill, st, b)
                if st.left is not None:  # the kernel buffer is full
                    st.cap = sent
                    if err is not None:
                        st.error = s.errno_of(err, "readdir")
                    break
            if err is not None:
                if sent == 0:
                    raise err
                st.error = s.errno_of(err, "readdir")
                break
            if b is None:  # nothing left
                if st.error:
                    break  # the rest went out: the error surfaces on the next request
                d.eof_off = st.pos if d.mode != 2 else st.next_off
                st.close()
                return 0
    except BaseException as e:
        if st is not None:
            st.close()
        return s.fail(e, "readdir")
    d.key = s.new_dir_key()
    streams[d.key] = st
    return 0
