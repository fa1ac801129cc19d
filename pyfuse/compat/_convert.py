"""The conversions of :mod:`pyfuse.compat`: fusepy's values (stat and statvfs dicts with float
or nanosecond times, int results that may be negative errnos, ``fuse_file_info``) to and from
pyfuse's."""
from __future__ import annotations

import os
import struct
from operator import itemgetter
from typing import Any

from .._core.convert import ATTR_STRUCT, PackedAttr, pack_attr
from ..errors import FuseError
from ..types import Attr, StatVFS
from ._ctypes import fuse_file_info_struct

__all__ = ["RawFileInfo", "to_attr", "times_of", "to_statvfs", "check", "TYPE_ONLY"]

_NS = 1_000_000_000
#: Keys of a readdir attribute dict that carry no more than an entry's type (mfusepy: "only
#: the mode and ino are used"): such entries are not full attributes for readdirplus.
TYPE_ONLY = frozenset(("st_mode", "st_ino"))


class RawFileInfo(fuse_file_info_struct):
    """What a ``raw_fi=True`` filesystem gets instead of an ``fh`` int: fusepy's
    ``fuse_file_info``, a ctypes structure with libfuse 3's layout. ``open``/``create`` may set
    ``fh``, ``direct_io``, ``keep_cache`` and ``nonseekable``; the same object is passed to
    every later call on that open file."""

    def __init__(self, flags: int = 0) -> None:
        super().__init__(flags=flags)

    def __repr__(self) -> str:
        return (f"fuse_file_info(flags={self.flags:#o}, fh={self.fh}, "
                f"direct_io={self.direct_io}, keep_cache={self.keep_cache})")


def _ns(value: Any) -> int:
    """fusepy's conversion of seconds (tv_sec = int(v), tv_nsec = int((v - tv_sec) * 1e9))."""
    if type(value) is int:
        return value * _NS
    sec = int(value)
    return sec * _NS + int((value - sec) * 1e9)


_KEYS = ("st_mode", "st_ino", "st_nlink", "st_uid", "st_gid", "st_size", "st_blocks",
         "st_rdev", "st_blksize", "st_atime", "st_mtime", "st_ctime")
_ZERO = dict.fromkeys(_KEYS, 0)
_fields = itemgetter(*_KEYS)
_pack = ATTR_STRUCT.pack


def to_attr(d: Any, use_ns: bool, what: str) -> PackedAttr:
    """A getattr dict (``st_*`` keys; a missing key is 0, as fusepy's zeroed ``struct stat``)
    packed for the shim; times in float seconds, or integer nanoseconds with ``use_ns``. An
    Attr or os.stat_result is taken too. ``what`` names the operation in the error for
    anything else."""
    try:
        mode, ino, nlink, uid, gid, size, blocks, rdev, blksize, a, m, c = \
            _fields({**_ZERO, **d})
        if use_ns:
            a, m, c = int(a), int(m), int(c)
        else:
            a = a * _NS if type(a) is int else _ns(a)
            m = m * _NS if type(m) is int else _ns(m)
            c = c * _NS if type(c) is int else _ns(c)
        return PackedAttr(_pack(mode, ino, nlink, uid, gid, size, blocks, rdev, blksize, a, m,
                                c))
    except (TypeError, ValueError, struct.error) as e:
        if isinstance(d, (Attr, os.stat_result)):
            return PackedAttr(pack_attr(d))
        raise TypeError(f"{what} must return a dict of st_* values, not {d!r:.200} ({e})"
                        ) from None


def times_of(packed: bytes) -> tuple[int, int]:
    """(atime_ns, mtime_ns) of packed attributes."""
    fields = ATTR_STRUCT.unpack(packed)
    return fields[9], fields[10]


def to_statvfs(d: Any) -> StatVFS:
    if not isinstance(d, dict):
        raise TypeError(f"statfs must return a dict of f_* values, not {type(d).__name__}")
    # fusepy copies the keys the C struct has and leaves the rest 0
    return StatVFS(**{f: d.get(f, 0) for f in StatVFS._fields})


def check(r: Any) -> None:
    """fusepy hands an int result to libfuse as is: a negative one is an errno."""
    if type(r) is int and r < 0:
        raise FuseError(-r)
