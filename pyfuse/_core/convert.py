"""Every conversion between Python values and the compact structs of csrc/pyfuse_cdef.h.

``Attr`` and ``StatVFS`` are packed with :mod:`struct` into ``struct pyfuse_attr`` and
``struct pyfuse_statvfs`` (twelve and eleven 8-byte fields); C converts those to ``struct stat``
and ``struct statvfs``. Nothing else in pyfuse knows these layouts (tests/test_build.py checks
them against the compiler's). Results that do not convert raise :class:`BadReturn` with a message
that names the operation.
"""
from __future__ import annotations

import codecs
import errno
import os
import struct
import sys
from dataclasses import fields
from typing import Any, Optional

from .._pyfuse_c import ffi, lib
from ..errors import BadReturn
from ..types import Attr, AttrLike, Config, FileInfo

__all__ = ["ATTR_STRUCT", "STATVFS_STRUCT", "NO_ATTR", "ENC", "UTF8", "pack_attr",
           "pack_statvfs", "config_to_c", "path", "encode", "byte_buffer", "copy_out", "opened",
           "open_result", "dir_open", "fd_range", "fd_range_parts", "sized_reply", "FH_LIMIT",
           "file_handle"]

# struct pyfuse_attr: mode ino nlink uid gid (u64) size blocks (i64) rdev (u64) blksize atime mtime
# ctime (i64).
ATTR_STRUCT = struct.Struct("=5Q2qQ4q")
STATVFS_STRUCT = struct.Struct("=11Q")
NO_ATTR = bytes(ATTR_STRUCT.size)  # mode 0: "no attributes" for a readdir entry

#: The encoding of paths and names (as os.fsencode), with surrogateescape.
ENC = sys.getfilesystemencoding()
#: ENC is UTF-8: a name or path is decoded with ``bytes.decode()``'s default (no codec or
#: error handler looked up), and with os.fsdecode's rules only if that fails
UTF8 = codecs.lookup(ENC).name == "utf-8"

_string = ffi.string
_memmove = ffi.memmove


class PackedAttr(bytes):
    """Attributes another API has already packed as struct pyfuse_attr (``ATTR_STRUCT``), from
    its own attribute values (pyfuse.compat's stat dicts): handlers of that API return them
    where the path API returns an Attr, and :func:`pack_attr` passes them through."""

    __slots__ = ()


def pack_attr(a: AttrLike) -> bytes:
    """Pack an Attr or os.stat_result into struct pyfuse_attr (raises on bad types or ranges)."""
    if type(a) is Attr:  # its own C struct
        return bytes(a)
    if type(a) is PackedAttr:
        return a
    if isinstance(a, os.stat_result):
        return ATTR_STRUCT.pack(a.st_mode, a.st_ino, a.st_nlink, a.st_uid, a.st_gid, a.st_size,
                                a.st_blocks, a.st_rdev, a.st_blksize, a.st_atime_ns,
                                a.st_mtime_ns, a.st_ctime_ns)
    if isinstance(a, Attr):  # a subclass
        return bytes(a)
    raise TypeError(f"expected Attr or os.stat_result, got {type(a).__name__}")


def pack_statvfs(v: Any) -> bytes:
    """Pack a StatVFS or os.statvfs_result into struct pyfuse_statvfs."""
    return STATVFS_STRUCT.pack(v.f_bsize, v.f_frsize, v.f_blocks, v.f_bfree, v.f_bavail,
                               v.f_files, v.f_ffree, v.f_favail, getattr(v, "f_fsid", 0),
                               v.f_flag, v.f_namemax)


_RDPLUS = {"auto": lib.PYFUSE_RDPLUS_AUTO, "always": lib.PYFUSE_RDPLUS_ALWAYS,
           "off": lib.PYFUSE_RDPLUS_OFF}


def config_to_c(config: Config, dup_names: bool = False) -> Any:
    """The struct pyfuse_config for a :class:`Config` (None: libfuse's default for the
    capabilities, -1 in C); ``dup_names``: listings may repeat a name (pyfuse.compat's faces)."""
    c = ffi.new("struct pyfuse_config *")
    c.dup_names = dup_names
    for f in fields(config):
        v = getattr(config, f.name)
        if f.name in Config.CAPABILITIES:
            setattr(c, f.name, -1 if v is None else int(v))
        elif f.name == "readdirplus":
            c.readdirplus = _RDPLUS[v]  # checked by Config
        elif f.name in ("uid", "gid", "umask"):
            setattr(c, "set_" + ("mode" if f.name == "umask" else f.name), v is not None)
            setattr(c, f.name, v or 0)
        else:
            setattr(c, f.name, v)
    return c


def path(p: Any) -> Optional[str]:
    """A C path or name as str (os.fsdecode's rules); None for NULL."""
    return _string(p).decode(ENC, "surrogateescape") if p else None


def encode(s: Any, what: str) -> bytes:
    """A str (encoded as os.fsencode) or bytes-like result as bytes."""
    if isinstance(s, str):
        return s.encode(ENC, "surrogateescape")
    if isinstance(s, (bytes, bytearray)):
        return bytes(s)
    raise BadReturn(f"{what} must return str or bytes, not {type(s).__name__}")


def byte_buffer(data: Any, size: int, what: str) -> tuple[Any, int]:
    """A bytes-like result of at most ``size`` bytes, and its length: bytes, bytearray and
    memoryview as they are (no intermediate object), other buffer-protocol objects as one
    memoryview. Raises BadReturn naming ``what`` otherwise. (The path API copies it into
    libfuse's buffer, the inode API hands it to its reply.)"""
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
    return data, n


def copy_out(data: Any, buf: Any, size: int, what: str) -> int:
    """Copy a bytes-like result into a C buffer of ``size`` bytes; return the byte count."""
    data, n = byte_buffer(data, size, what)
    if n:
        _memmove(buf, data, n)
    return n


#: Bit 63 of an open file's handle marks, in C, a FileInfo(fd_backed=True) (csrc/pyfuse.h):
#: the other handles a filesystem gives are below it, but in a session of pyfuse.compat
#: (``plain``), whose programs may use all 64 bits and have no fd-backed files.
FH_LIMIT = 1 << 63


def file_handle(fh: Any, what: str, plain: bool = False) -> int:
    """``fh`` if it is a file handle C can keep for the file (see :data:`FH_LIMIT`), else
    BadReturn naming it. A handle with bit 63 set would make reads and writes of the file go
    to whatever file descriptor its other bits name."""
    if isinstance(fh, int) and 0 <= fh < (1 << 64 if plain else FH_LIMIT):
        return fh
    raise BadReturn(f"{what} returned the file handle {fh!r}: a handle is an int of "
                    f"0..{'2**64-1' if plain else '2**63-1 (bit 63 marks fd_backed files)'}")


_DIRECT_IO, _KEEP_CACHE = lib.PYFUSE_OPEN_DIRECT_IO, lib.PYFUSE_OPEN_KEEP_CACHE
_NONSEEKABLE, _FD_BACKED = lib.PYFUSE_OPEN_NONSEEKABLE, lib.PYFUSE_OPEN_FD_BACKED


def opened(r: Any, what: str, s: Any = None) -> tuple[int, int]:
    """(fh, PYFUSE_OPEN_* bits) of what open/create returned (None, an int fh, a FileInfo),
    checked for C in session ``s`` (None: pyfuse's own), whose ``_plain_fh`` handles may use
    all 64 bits (:func:`file_handle`); BadReturn naming a bad value. Both APIs' replies of an
    open file take their handle and flags from it."""
    if r is None:
        return 0, 0
    if type(r) is int:
        if 0 <= r < FH_LIMIT:
            return r, 0
        return file_handle(r, what, s is not None and s._plain_fh), 0
    if isinstance(r, FileInfo):
        fh = r.fh
        if r.fd_backed and (s is not None and s._plain_fh
                            or not (type(fh) is int and 0 <= fh < 1 << 31)):
            raise BadReturn(f"{what}: an fd_backed FileInfo needs a file descriptor as fh, "
                            f"not {fh!r}")
        if not (type(fh) is int and 0 <= fh < FH_LIMIT):
            fh = file_handle(fh, what, s is not None and s._plain_fh)
        return fh, ((_DIRECT_IO if r.direct_io else 0) | (_KEEP_CACHE if r.keep_cache else 0)
                    | (_NONSEEKABLE if r.nonseekable else 0)
                    | (_FD_BACKED if r.fd_backed else 0))
    raise BadReturn(f"{what} must return an int file handle, a FileInfo or None, "
                    f"not {type(r).__name__}")


def open_result(r: Any, o: Any, what: str, s: Any = None) -> None:
    """Set struct pyfuse_open ``o`` (its flags zeroed by C) from what open/create returned in
    session ``s`` (:func:`opened`)."""
    if r is None:
        return
    if type(r) is int and 0 <= r < FH_LIMIT:  # the common answer, without opened's call
        o.fh = r
        return
    o.fh, bits = opened(r, what, s)
    if bits:
        o.direct_io = bits & _DIRECT_IO != 0
        o.keep_cache = bits & _KEEP_CACHE != 0
        o.nonseekable = bits & _NONSEEKABLE != 0
        o.fd_backed = bits & _FD_BACKED != 0


def dir_open(r: Any, d: Any) -> int:
    """Set struct pyfuse_dir ``d``'s fh from what opendir returned (None, an int fh, a
    FileInfo with keep_cache/cache_readdir); returns the open bits for the kernel."""
    if r is None or type(r) is int:
        d.fh = r or 0
        return 0
    if isinstance(r, FileInfo):
        if type(r.fh) is not int or r.direct_io or r.nonseekable or r.fd_backed:
            raise BadReturn(f"opendir: a directory's FileInfo may set fh (an int), keep_cache "
                            f"and cache_readdir only, not {r!r}")
        d.fh = r.fh
        return ((lib.PYFUSE_OPEN_KEEP_CACHE if r.keep_cache else 0)
                | (lib.PYFUSE_OPEN_CACHE_DIR if r.cache_readdir else 0))
    raise BadReturn(f"opendir must return an int handle, a FileInfo or None, not "
                    f"{type(r).__name__}")


def fd_range_parts(r: Any, what: str) -> tuple[int, int, int]:
    """A :class:`~pyfuse.FdRange`'s (fd, pos, size) as C takes them (size -1: to the end,
    1 << 62); BadReturn naming it if it is not one C can use."""
    fd, pos, size = r
    if type(fd) is not int or not 0 <= fd < 1 << 31 or type(pos) is not int or \
            not 0 <= pos < 1 << 63 or type(size) is not int or size >= 1 << 63:
        raise BadReturn(f"{what}: invalid {r!r}")
    return fd, pos, size if size >= 0 else 1 << 62


def fd_range(r: Any, fdr: Any, what: str) -> None:
    """Set struct pyfuse_fdrange ``fdr`` from a :class:`~pyfuse.FdRange`."""
    fdr.fd, fdr.pos, fdr.size = fd_range_parts(r, what)


def sized_reply(data: bytes, buf: Any, size: int) -> int:
    """The xattr size protocol: size 0 asks for the length, a short buffer is ERANGE."""
    n = len(data)
    if size == 0:
        return n
    if n > size:
        return -errno.ERANGE
    _memmove(buf, data, n)
    return n
