"""The path API's C-to-Python entry points (``extern "Python+C"`` in csrc/callbacks_cdef.h).

One per row of csrc/optable.h. Each converts the C arguments (:mod:`pyfuse._core.convert`),
calls the filesystem's method (the Session keeps the bound methods of the operations the
subclass overrides as ``_op_<name>``) and converts the result into the C output arguments.
Most share one body through :func:`pyfuse._core.dispatch.callback`; getattr, read, write and
readdir, the hot ones, are written out with the same body to spare a call. Exceptions follow
:mod:`pyfuse.errors` through ``Session._fail``.
"""
from __future__ import annotations

import struct
import time
from ctypes import addressof as _addressof
from typing import Any, Optional

from ._core.convert import (
    ATTR_STRUCT,
    ENC,
    STATVFS_STRUCT,
    UTF8,
    copy_out,
    dir_open,
    encode,
    fd_range,
    fd_range_parts,
    open_result,
    pack_attr,
    pack_statvfs,
    sized_reply,
)
from ._core.convert import path as _path
from ._core.dispatch import OUT_NAME as _NAME
from ._core.dispatch import OUT_NAME_SIZE as _NAME_SIZE
from ._core.dispatch import OUT_SLOTS as _SLOTS
from ._core.dispatch import SESSIONS as _SESSIONS
from ._core.dispatch import callback, extern
from ._core.dispatch import here as _here
from ._core.poll import poll_handle
from ._pyfuse_c import ffi, lib
from .errors import BadReturn
from .types import Attr, FdRange, Lock

_memmove = ffi.memmove
_buffer = ffi.buffer
_ATTR_SIZE = ATTR_STRUCT.size
_string = ffi.string
_long_path = lib.pyfuse_out_path
_NULL = ffi.NULL
_UTF8 = UTF8
_ATIME_OMIT, _ATIME_NOW = lib.PYFUSE_ATIME_OMIT, lib.PYFUSE_ATIME_NOW
_MTIME_OMIT, _MTIME_NOW = lib.PYFUSE_MTIME_OMIT, lib.PYFUSE_MTIME_NOW
_REPLY_FDRANGE = lib.PYFUSE_REPLY_FDRANGE
#: struct pyfuse_out's fdr (struct pyfuse_fdrange: int fd, int64_t pos, int64_t size)
_FDR = ffi.offsetof("struct pyfuse_out", "fdr")
_put_fdr = struct.Struct("=i4xqq").pack_into
if struct.calcsize("=i4xqq") != ffi.sizeof("struct pyfuse_fdrange"):
    raise ImportError("pyfuse: struct pyfuse_fdrange is not laid out as =i4xqq")


def _fh(fh: int, has_fh: int) -> Optional[int]:
    return fh if has_fh else None


# ---------------------------------------------------------------------------------------------
# the hot ones, written out


@extern
def pyfuse_cb_getattr(h, slot, pathlen, fh=None):
    # the cheap crossing (dispatch.outs): the path is read from the thread's out struct (one
    # bytes object, no cdata) and the attributes written back there, which C converts; fh:
    # given when C calls this function as pyfuse_cb_fgetattr (an fstat), below
    s = _SESSIONS[h]
    o = s._outs[slot]
    if o is None:
        o = _here(s, slot)
    if pathlen < 0:
        path = None  # an open file whose name is gone (Config.nullpath_ok)
    else:
        path = o[_NAME:_NAME + pathlen] if pathlen < _NAME_SIZE else _string(_long_path())
        try:  # UTF-8: bytes.decode's default (no codec and handler looked up), else os.fsdecode's
            path = path.decode() if _UTF8 else path.decode(ENC, "surrogateescape")
        except UnicodeDecodeError:
            path = path.decode(ENC, "surrogateescape")
    try:
        a = s._op_getattr(path, fh)
        if a.__class__ is Attr:  # an Attr is its C struct: C reads it at its address
            if slot < _SLOTS:  # (PYFUSE_REPLY_AT), the session holds it until the next request
                s._keep[slot] = a
                return _addressof(a)
        else:
            try:
                a = pack_attr(a)
            except Exception as e:
                raise BadReturn(f"getattr returned an invalid attribute object: {e}") from None
    except BaseException as e:
        return s._fail(e, "getattr", _NULL if path is None else path)
    o[:_ATTR_SIZE] = a
    return 0


extern(pyfuse_cb_getattr, "pyfuse_cb_fgetattr")  # an fstat: the same, with the handle


def _path_in(o: Any, pathlen: int) -> Optional[str]:
    """The request's path, which C put in the thread's out struct ``o`` (``pathlen`` bytes;
    -1: none; too long for it: asked of C), decoded as getattr decodes it (written out there
    to spare this call)."""
    if pathlen < 0:
        return None  # an open file whose name is gone (Config.nullpath_ok)
    path = o[_NAME:_NAME + pathlen] if pathlen < _NAME_SIZE else _string(_long_path())
    try:
        return path.decode() if _UTF8 else path.decode(ENC, "surrogateescape")
    except UnicodeDecodeError:
        return path.decode(ENC, "surrogateescape")


@extern
def pyfuse_cb_read(h, slot, pathlen, buf, size, off, fh):
    # the path as getattr's; the data copied into C's buffer, or an FdRange written into the
    # thread's out struct (its fdr) for C to read from
    s = _SESSIONS[h]
    o = s._outs[slot]
    if o is None:
        o = _here(s, slot)
    path = _path_in(o, pathlen)
    try:
        data = s._op_read(path, size, off, fh)
        if type(data) is FdRange:
            _put_fdr(o, _FDR, *fd_range_parts(data, "read"))
            return _REPLY_FDRANGE
        return copy_out(data, buf, size, "read")
    except BaseException as e:
        return s._fail(e, "read", _NULL if path is None else path)


@extern
def pyfuse_cb_write(h, slot, pathlen, buf, size, off, fh):
    # the path as getattr's; the data a read-only view of libfuse's buffer
    s = _SESSIONS[h]
    o = s._outs[slot]
    path = _path_in(_here(s, slot) if o is None else o, pathlen)
    try:
        n = s._op_write(path, memoryview(_buffer(buf, size)).toreadonly(), off, fh)
        if type(n) is not int or not 0 <= n <= size:
            raise BadReturn(f"write must return the number of bytes written (0..{size}), "
                            f"not {n!r}")
    except BaseException as e:
        return s._fail(e, "write", _NULL if path is None else path)
    return n


@extern
def pyfuse_cb_readdir(h, path, off, d, fill, plus):
    s = _SESSIONS[h]
    return s._listings.serve(s._op_readdir, path, off, d, fill, plus)


# ---------------------------------------------------------------------------------------------
# life cycle


@callback("pyfuse_cb_init", "init")
def _init(s: Any) -> None:
    s.ops.init()


@callback("pyfuse_cb_destroy", "destroy", void=True)
def _destroy(s: Any) -> None:
    s.ops.destroy()


# ---------------------------------------------------------------------------------------------
# attributes and names


@callback("pyfuse_cb_readlink", "readlink")
def _readlink(s: Any, path: Any, buf: Any, size: int) -> None:
    target = encode(s._op_readlink(_path(path)), "readlink")
    n = min(len(target), size - 1)  # libfuse wants it NUL-terminated, truncated if needed
    _memmove(buf, target, n)
    buf[n] = b"\0"


@callback("pyfuse_cb_mknod", "mknod")
def _mknod(s: Any, path: Any, mode: int, rdev: int) -> None:
    s._op_mknod(_path(path), mode, rdev)


@callback("pyfuse_cb_mkdir", "mkdir")
def _mkdir(s: Any, path: Any, mode: int) -> None:
    s._op_mkdir(_path(path), mode)


@callback("pyfuse_cb_unlink", "unlink")
def _unlink(s: Any, path: Any) -> None:
    s._op_unlink(_path(path))


@callback("pyfuse_cb_rmdir", "rmdir")
def _rmdir(s: Any, path: Any) -> None:
    s._op_rmdir(_path(path))


@callback("pyfuse_cb_symlink", "symlink")
def _symlink(s: Any, target: Any, path: Any) -> None:
    s._op_symlink(_path(target), _path(path))


@callback("pyfuse_cb_rename", "rename")
def _rename(s: Any, old: Any, new: Any, flags: int) -> None:
    s._op_rename(_path(old), _path(new), flags)


@callback("pyfuse_cb_link", "link")
def _link(s: Any, old: Any, new: Any) -> None:
    s._op_link(_path(old), _path(new))


@callback("pyfuse_cb_chmod", "chmod")
def _chmod(s: Any, path: Any, mode: int, fh: int, has_fh: int) -> None:
    s._op_chmod(_path(path), mode, _fh(fh, has_fh))


@callback("pyfuse_cb_chown", "chown")
def _chown(s: Any, path: Any, uid: int, gid: int, fh: int, has_fh: int) -> None:
    s._op_chown(_path(path), uid, gid, _fh(fh, has_fh))


@callback("pyfuse_cb_truncate", "truncate")
def _truncate(s: Any, path: Any, size: int, fh: int, has_fh: int) -> None:
    s._op_truncate(_path(path), size, _fh(fh, has_fh))


@callback("pyfuse_cb_utimens", "utimens")
def _utimens(s: Any, path: Any, atime_ns: Optional[int], mtime_ns: Optional[int], which: int,
             fh: int, has_fh: int) -> None:
    if which:
        now = time.time_ns()
        if which & _ATIME_OMIT:
            atime_ns = None
        elif which & _ATIME_NOW:
            atime_ns = now
        if which & _MTIME_OMIT:
            mtime_ns = None
        elif which & _MTIME_NOW:
            mtime_ns = now
    s._op_utimens(_path(path), atime_ns, mtime_ns, _fh(fh, has_fh))


@callback("pyfuse_cb_access", "access")
def _access(s: Any, path: Any, mask: int) -> None:
    s._op_access(_path(path), mask)


# ---------------------------------------------------------------------------------------------
# files


@callback("pyfuse_cb_open", "open")
def _open(s: Any, path: Any, o: Any) -> None:
    open_result(s._op_open(_path(path), o.flags), o, "open", s)


@callback("pyfuse_cb_create", "create")
def _create(s: Any, path: Any, mode: int, o: Any) -> None:
    open_result(s._op_create(_path(path), mode, o.flags), o, "create", s)


@callback("pyfuse_cb_write_fd", "write_fd")
def _write_fd(s: Any, path: Any, size: int, off: int, fh: int, fdr: Any) -> None:
    r = s._op_write_fd(_path(path), size, off, fh)
    if r is not None:
        if type(r) is not FdRange:
            raise BadReturn(f"write_fd must return a FdRange or None, not {type(r).__name__}")
        fd_range(r, fdr, "write_fd")


@callback("pyfuse_cb_statfs", "statfs")
def _statfs(s: Any, path: Any, out: Any) -> None:
    v = s._op_statfs(_path(path))
    try:
        packed = pack_statvfs(v)
    except Exception as e:
        raise BadReturn(f"statfs returned an invalid object: {e}") from None
    _memmove(out, packed, STATVFS_STRUCT.size)


@callback("pyfuse_cb_flush", "flush")
def _flush(s: Any, path: Any, fh: int) -> None:
    s._op_flush(_path(path), fh)


@callback("pyfuse_cb_release", "release")
def _release(s: Any, path: Any, fh: int, flags: int) -> None:
    s._op_release(_path(path), fh)


@callback("pyfuse_cb_fsync", "fsync")
def _fsync(s: Any, path: Any, datasync: int, fh: int) -> None:
    s._op_fsync(_path(path), bool(datasync), fh)


@callback("pyfuse_cb_fallocate", "fallocate")
def _fallocate(s: Any, path: Any, mode: int, off: int, length: int, fh: int) -> None:
    s._op_fallocate(_path(path), mode, off, length, fh)


@callback("pyfuse_cb_copy_file_range", "copy_file_range")
def _copy_file_range(s: Any, path_in: Any, fh_in: int, off_in: int, path_out: Any, fh_out: int,
                     off_out: int, size: int, flags: int) -> int:
    n = s._op_copy_file_range(_path(path_in), fh_in, off_in, _path(path_out), fh_out, off_out,
                              size, flags)
    if type(n) is not int or not 0 <= n <= size:
        raise BadReturn(f"copy_file_range must return the bytes copied (0..{size}), not {n!r}")
    return n


@callback("pyfuse_cb_lseek", "lseek")
def _lseek(s: Any, path: Any, off: int, whence: int, fh: int) -> int:
    r = s._op_lseek(_path(path), off, whence, fh)
    if type(r) is not int or r < 0:
        raise BadReturn(f"lseek must return a non-negative offset, not {r!r}")
    return r


@callback("pyfuse_cb_lock", "lock")
def _lock(s: Any, path: Any, fh: int, cmd: int, lk: Any) -> None:
    lock = Lock(lk.type, lk.whence, lk.start, lk.len, lk.pid)
    s._op_lock(_path(path), fh, cmd, lock)
    lk.type, lk.whence, lk.start, lk.len, lk.pid = (lock.type, lock.whence, lock.start, lock.len,
                                                    lock.pid)


@callback("pyfuse_cb_flock", "flock")
def _flock(s: Any, path: Any, fh: int, op: int) -> None:
    s._op_flock(_path(path), fh, op)


@callback("pyfuse_cb_ioctl", "ioctl")
def _ioctl(s: Any, path: Any, cmd: int, arg: int, fh: int, flags: int, data: Any, in_size: int,
           out_size: int) -> int:
    if s._ioctl_in_place:
        return s._op_ioctl(_path(path), cmd, arg, fh, flags, data, out_size)
    inp = _buffer(data, in_size)[:] if in_size else None
    r = s._op_ioctl(_path(path), cmd, arg, fh, flags, inp, out_size)
    if r is None:
        return 0
    if type(r) is int:
        return r
    copy_out(r, data, out_size, "ioctl")
    return 0


@callback("pyfuse_cb_poll", "poll")
def _poll(s: Any, path: Any, fh: int, ph: Any, revents: Any) -> None:
    handle = poll_handle(s, ph)  # owns ph from here: freed when collected
    r = s._op_poll(_path(path), fh, handle) if s._poll_handle else s._op_poll(_path(path), fh)
    if type(r) is not int or r < 0:
        raise BadReturn(f"poll must return an event mask, not {r!r}")
    revents[0] = r


# ---------------------------------------------------------------------------------------------
# extended attributes


@callback("pyfuse_cb_setxattr", "setxattr")
def _setxattr(s: Any, path: Any, name: Any, value: Any, size: int, flags: int) -> None:
    s._op_setxattr(_path(path), _path(name), _buffer(value, size)[:], flags)


@callback("pyfuse_cb_getxattr", "getxattr")
def _getxattr(s: Any, path: Any, name: Any, value: Any, size: int) -> int:
    v = s._op_getxattr(_path(path), _path(name))
    if not isinstance(v, (bytes, bytearray, memoryview)):
        raise BadReturn(f"getxattr must return bytes, not {type(v).__name__}")
    return sized_reply(bytes(v), value, size)


@callback("pyfuse_cb_listxattr", "listxattr")
def _listxattr(s: Any, path: Any, buf: Any, size: int) -> int:
    names = [encode(n, "listxattr") for n in s._op_listxattr(_path(path))]
    return sized_reply(b"".join(n + b"\0" for n in names), buf, size)


@callback("pyfuse_cb_removexattr", "removexattr")
def _removexattr(s: Any, path: Any, name: Any) -> None:
    s._op_removexattr(_path(path), _path(name))


# ---------------------------------------------------------------------------------------------
# directories (readdir is with the hot ones above; the listing itself is pyfuse._core.readdir)


@callback("pyfuse_cb_opendir", "opendir")
def _opendir(s: Any, path: Any, d: Any) -> None:
    d.open_bits = dir_open(s._op_opendir(_path(path)), d)


@callback("pyfuse_cb_fsyncdir", "fsyncdir")
def _fsyncdir(s: Any, path: Any, datasync: int, fh: int) -> None:
    s._op_fsyncdir(_path(path), bool(datasync), fh)


@callback("pyfuse_cb_releasedir", "releasedir")
def _releasedir(s: Any, path: Any, d: Any) -> None:
    s._listings.release(d)
    if s._op_releasedir is not None:
        s._op_releasedir(_path(path), d.fh)
