"""The inode API's replies: each turns what a handler returned into one call of the shim's
``pyfuse_ll_reply_*`` (csrc/ll_reply.c), now (a synchronous handler) or when its coroutine
finishes (an async one). ``reply(session, req, result[, extra])``; conversion errors raise
before anything is sent (the caller then replies the errno of the policy), and a reply the
shim refused after answering EIO itself raises :class:`Refused` (logged, nothing more sent).
The ``fail_*`` functions send an errno with the operation's clean-up.
"""
from __future__ import annotations

import errno
import struct
from typing import Any

from .._core.convert import (
    ATTR_STRUCT,
    byte_buffer,
    dir_open,
    encode,
    opened,
    pack_attr,
    pack_statvfs,
)
from .._pyfuse_c import ffi, lib
from ..errors import BadReturn, FuseError
from ..types import FdRange, Lock
from .operations import Entry

_EINVAL, _EBADMSG = -errno.EINVAL, -errno.EBADMSG
_REFUSED = (_EINVAL, _EBADMSG, -errno.ERANGE)  # what C refuses attributes with
_c_entry = lib.pyfuse_ll_reply_entry
_c_attr = lib.pyfuse_ll_reply_attr
_c_buf = lib.pyfuse_ll_reply_buf
_c_err = lib.pyfuse_ll_reply_err
_from_buffer = ffi.from_buffer


class Refused(Exception):
    """The shim refused a reply (and answered EIO itself): logged by the caller."""


def refused(rc: int, packed: bytes, what: str) -> None:
    """Raise the :class:`Refused` that says why the shim refused the attributes ``packed``
    (``rc``: -EINVAL, inode number 0; -EBADMSG, no valid file type)."""
    mode, ino = ATTR_STRUCT.unpack(packed)[:2]
    if rc == _EINVAL:
        raise Refused(f"{what} has inode number 0 (an inode the kernel is given must have a "
                      "number); replied EIO")
    if rc == -errno.ERANGE:
        nlink, uid, gid = ATTR_STRUCT.unpack(packed)[2:5]
        raise Refused(f"{what} has nlink {nlink}, uid {uid}, gid {gid}: beyond 32 bits (inode "
                      f"{ino}); replied EIO")
    raise Refused(f"{what} has mode {mode:#o}, which has no valid file type (inode {ino}); "
                  "replied EIO")


def _pack(a: Any, what: str) -> bytes:
    try:
        return pack_attr(a)
    except Exception as e:
        raise BadReturn(f"{what}: {e}") from None


_MAX_TIMEOUT = float("inf")


#: A packed entry: an entry's attributes (ATTR_STRUCT), generation and both timeouts in one
#: ``bytes``, laid out as the first fields of the shim's struct pyfuse_out, made by whoever
#: checked them (pyfuse.compat's ``to_entry``: a generation of 64 bits, finite timeouts >= 0).
#: Only a session whose ``_packed`` is true (pyfuse.compat's llfuse and pyfuse3 faces) may
#: return one, replied as it is with no further Python call (the generated callbacks and
#: :func:`reply_entry`/:func:`reply_attr` test for it first); from any other session ``bytes``
#: are a bad value.
ENTRY_STRUCT = struct.Struct(ATTR_STRUCT.format + "Qdd")
_ATTR_SIZE = ATTR_STRUCT.size
_tail = struct.Struct("=Qdd").unpack_from


def packed_parts(r: bytes) -> tuple[bytes, int, float, float]:
    """(packed attr, generation, entry_timeout, attr_timeout) of a packed entry."""
    gen, et, at = _tail(r, _ATTR_SIZE)
    return r[:_ATTR_SIZE], gen, et, at


def _timeout(v: Any, name: str) -> float:
    """A timeout an Entry gives: a finite number of seconds >= 0 (NaN, inf and negative
    values are refused)."""
    if type(v) is float or type(v) is int:
        if 0 <= v < _MAX_TIMEOUT:
            return v
    elif isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < _MAX_TIMEOUT:
        return float(v)
    raise BadReturn(f"the Entry returned has {name}={v!r}: timeouts are finite numbers of "
                    "seconds >= 0 (None: the Config's)")


def entry_parts(s: Any, r: Any) -> tuple[bytes, int, float, float]:
    """(packed attr, generation, entry_timeout, attr_timeout) of an Entry, a bare Attr or
    (from pyfuse.compat's sessions) a packed entry."""
    if type(r) is bytes and s._packed:
        return packed_parts(r)
    if type(r) is Entry:
        a, gen, et, at = r
        return (_pack(a, "expected an Entry or Attr"), gen,
                s._entry_timeout if et is None else _timeout(et, "entry_timeout"),
                s._attr_timeout if at is None else _timeout(at, "attr_timeout"))
    return _pack(r, "expected an Entry or Attr"), 0, s._entry_timeout, s._attr_timeout


def reply_entry(s: Any, req: Any, r: Any) -> None:
    packed, gen, et, at = entry_parts(s, r)
    rc = _c_entry(req, packed, gen, et, at)
    if rc in _REFUSED:
        refused(rc, packed, "the entry returned")


def reply_attr(s: Any, req: Any, r: Any) -> None:
    packed: bytes
    if type(r) is bytes and s._packed:
        packed, at = r[:_ATTR_SIZE], _tail(r, _ATTR_SIZE)[2]
    elif type(r) is Entry:
        packed = _pack(r.attr, "expected an Attr")
        at = s._attr_timeout if r.attr_timeout is None else _timeout(r.attr_timeout,
                                                                      "attr_timeout")
    else:
        packed = _pack(r, "expected an Attr")
        at = s._attr_timeout
    rc = _c_attr(req, packed, at)
    if rc in _REFUSED:
        refused(rc, packed, "the attributes returned")


def reply_none(s: Any, req: Any, r: Any) -> None:
    _c_err(req, 0)


def reply_readlink(s: Any, req: Any, r: Any) -> None:
    target = encode(r, "readlink")
    if 0 in target:  # (an int: given a bytes, bytes.__contains__ raises and clears a TypeError)
        raise BadReturn("readlink returned a target with a NUL byte")
    lib.pyfuse_ll_reply_readlink(req, target)


def reply_open(s: Any, req: Any, r: Any) -> None:
    lib.pyfuse_ll_reply_open(req, *opened(r, "open", s))


def reply_create(s: Any, req: Any, r: Any) -> None:
    try:
        entry, handle = r
    except (TypeError, ValueError):
        raise BadReturn(f"create must return (entry, fh), not {r!r:.80}") from None
    packed, gen, et, at = entry_parts(s, entry)
    fh, bits = opened(handle, "create", s)
    rc = lib.pyfuse_ll_reply_create(req, packed, gen, et, at, fh, bits)
    if rc in _REFUSED:
        refused(rc, packed, "the entry create returned")


def reply_read(s: Any, req: Any, data: Any, size: int) -> None:
    if type(data) is FdRange:
        fd, pos, want = data
        if type(fd) is not int or fd < 0 or type(pos) is not int or pos < 0:
            raise BadReturn(f"read: invalid {data!r}")
        lib.pyfuse_ll_reply_fd(req, fd, pos, size if want < 0 else min(want, size))
        return
    data, n = byte_buffer(data, size, "read")
    _c_buf(req, data if type(data) is bytes else _from_buffer(data) if n else b"", n)


def reply_write(s: Any, req: Any, n: Any, size: int) -> None:
    if type(n) is not int or not 0 <= n <= size:
        raise BadReturn(f"must return the number of bytes written (0..{size}), not {n!r}")
    lib.pyfuse_ll_reply_write(req, n)


def reply_statfs(s: Any, req: Any, v: Any) -> None:
    try:
        packed = pack_statvfs(v)
    except Exception as e:
        raise BadReturn(f"statfs returned an invalid object: {e}") from None
    lib.pyfuse_ll_reply_statfs(req, packed)


def _sized(req: Any, data: bytes, size: int) -> None:
    """The xattr size protocol: size 0 asks for the length, a short buffer is ERANGE."""
    if size == 0:
        lib.pyfuse_ll_reply_xattr(req, len(data))
    elif len(data) > size:
        raise FuseError(errno.ERANGE)
    else:
        _c_buf(req, data, len(data))


def reply_getxattr(s: Any, req: Any, v: Any, size: int) -> None:
    if not isinstance(v, (bytes, bytearray, memoryview)):
        raise BadReturn(f"getxattr must return bytes, not {type(v).__name__}")
    _sized(req, bytes(v), size)


def reply_listxattr(s: Any, req: Any, names: Any, size: int) -> None:
    _sized(req, b"".join(encode(n, "listxattr") + b"\0" for n in names), size)


def reply_lock(s: Any, req: Any, lk: Any) -> None:
    if not isinstance(lk, Lock):
        raise BadReturn(f"getlk must return a Lock, not {type(lk).__name__}")
    lib.pyfuse_ll_reply_lock(req, lk.type, lk.whence, lk.start, lk.len, lk.pid)


def reply_lseek(s: Any, req: Any, off: Any) -> None:
    if type(off) is not int or off < 0:
        raise BadReturn(f"lseek must return a non-negative offset, not {off!r}")
    lib.pyfuse_ll_reply_lseek(req, off)


def reply_ioctl(s: Any, req: Any, r: Any, out_size: int) -> None:
    if r is None or type(r) is int:
        lib.pyfuse_ll_reply_ioctl(req, r or 0, ffi.NULL, 0)
        return
    try:
        data = bytes(r)
    except TypeError:
        raise BadReturn(f"ioctl must return an int, bytes or None, not {type(r).__name__}") \
            from None
    if len(data) > out_size:
        raise BadReturn(f"ioctl returned {len(data)} bytes, more than the {out_size} the "
                        "caller's buffer holds")
    lib.pyfuse_ll_reply_ioctl(req, 0, data, len(data))


def reply_poll(s: Any, req: Any, r: Any) -> None:
    if type(r) is not int or r < 0:
        raise BadReturn(f"poll must return an event mask, not {r!r}")
    lib.pyfuse_ll_reply_poll(req, r)


def reply_opendir(s: Any, req: Any, r: Any, d: Any) -> None:
    lib.pyfuse_ll_reply_opendir(req, d, dir_open(r, d))


def fail_err(req: Any, err: int, *extra: Any) -> None:
    _c_err(req, err)


def fail_lookup(req: Any, err: int) -> None:
    lib.pyfuse_ll_fail_lookup(req, err)


def fail_opendir(req: Any, err: int, d: Any) -> None:
    lib.pyfuse_ll_fail_opendir(req, d, err)
