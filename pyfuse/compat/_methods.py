"""The methods :func:`pyfuse.compat._adapter.adapt` puts in the pyfuse Operations it builds:
one maker per fusepy operation, each returning the pyfuse method that calls the filesystem's
with fusepy's arguments and converts its result."""
from __future__ import annotations

import errno
import functools
import time
from typing import Any, Optional

from .._core.stream import Converted
from .._pyfuse_c import ffi
from ..errors import FuseError
from ..types import Attr, FileInfo, StatVFS
from ._convert import TYPE_ONLY, RawFileInfo, check, times_of, to_attr, to_statvfs

__all__ = ["METHODS"]


def _fh_out(self: Any, fi: RawFileInfo) -> FileInfo:
    """Keep the fh and flags of a raw_fi object the filesystem opened (pyfuse's handle is our
    key to them) and pass its per-open flags to the kernel."""
    key = self._next_fh()
    self._files[key] = (fi.fh, fi.flags)
    return FileInfo(key, bool(fi.direct_io), bool(fi.keep_cache), bool(fi.nonseekable))


# Each maker(calls, name, raw_fi, use_ns, with_offset, decode) returns the pyfuse method; the
# path is re-decoded only when the FUSE object's encoding is not pyfuse's (utf-8,
# surrogateescape), and the fh is the raw_fi object when raw_fi is set.

def _path_only(pyname: str, nargs: int) -> Any:
    """Operations whose fusepy arguments are the path and the first ``nargs`` of pyfuse's, and
    whose result is 0 or a negative errno."""
    def maker(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
              decode: Any) -> Any:
        fn = calls[name]
        if decode is None:
            def method(self: Any, path: str, *args: Any) -> None:
                check(fn(path, *args[:nargs]))
        else:
            def method(self: Any, path: str, *args: Any) -> None:
                check(fn(decode(path), *args[:nargs]))
        method.__name__ = pyname
        return method
    return maker


def _with_fh(pyname: str, before: int) -> Any:
    """Operations called as fusepy's ``name(path, <before args>, fh, ...)`` with pyfuse's
    ``(path, <before args>, fh)``: the fh (an int, or the raw_fi object) last."""
    def maker(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
              decode: Any) -> Any:
        fn = calls[name]

        def method(self: Any, path: str, *args: Any) -> Any:
            fh = args[before]
            r = fn(decode(path) if decode else path, *args[:before],
                   self._fi(fh) if raw_fi else fh)
            check(r)
            return r
        method.__name__ = pyname
        return method
    return maker


def _two_paths(pyname: str) -> Any:
    """link and symlink: fusepy's order is (new path, what it points at)."""
    def maker(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
              decode: Any) -> Any:
        fn = calls[name]
        d = decode or (lambda p: p)

        def method(self: Any, a: str, b: str) -> None:
            check(fn(d(b), d(a)))  # pyfuse: (target/old, path/new)
        method.__name__ = pyname
        return method
    return maker


def _getattr(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
             decode: Any) -> Any:
    fn = calls[name]

    if not raw_fi and decode is None:
        def getattr(self: Any, path: str, fh: Optional[int]) -> Any:
            return to_attr(fn(path, fh), use_ns, "getattr")
    else:
        def getattr(self: Any, path: str, fh: Optional[int]) -> Any:
            f: Any = fh
            if raw_fi and fh is not None:
                f = self._fi(fh)
            return to_attr(fn(decode(path) if decode else path, f), use_ns, "getattr")
    return getattr


def _readlink(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
              decode: Any) -> Any:
    fn = calls[name]

    def readlink(self: Any, path: str) -> Any:
        return fn(decode(path) if decode else path)
    return readlink


def _rename(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
            decode: Any) -> Any:
    fn = calls[name]
    d = decode or (lambda p: p)

    def rename(self: Any, old: str, new: str, flags: int) -> None:
        if flags:  # RENAME_NOREPLACE / RENAME_EXCHANGE: fusepy's rename(old, new) cannot
            raise FuseError(errno.EINVAL)
        check(fn(d(old), d(new)))
    return rename


def _chown(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
           decode: Any) -> Any:
    fn = calls[name]

    def chown(self: Any, path: str, uid: int, gid: int, fh: Optional[int]) -> None:
        check(fn(decode(path) if decode else path, uid, gid))
    return chown


def _truncate(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
              decode: Any) -> Any:
    fn = calls[name]  # passes the fh on, or not, as the original does (adapter._as_called)

    def truncate(self: Any, path: str, size: int, fh: Optional[int]) -> None:
        p = decode(path) if decode else path
        check(fn(p, size, None if fh is None else self._fi(fh) if raw_fi else fh))
    return truncate


_NS = 1_000_000_000


def _utimens(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
             decode: Any) -> Any:
    fn = calls[name]

    def utimens(self: Any, path: str, atime_ns: Optional[int], mtime_ns: Optional[int],
                fh: Optional[int]) -> None:
        p = decode(path) if decode else path
        if atime_ns is None or mtime_ns is None:  # UTIME_OMIT: keep the file's own time
            now = time.time_ns()
            cur = (now, now)
            if self._getattr is not None:
                try:
                    cur = times_of(to_attr(self._getattr(p, None), use_ns, "getattr"))
                except Exception:
                    pass
            if atime_ns is None:
                atime_ns = cur[0]
            if mtime_ns is None:
                mtime_ns = cur[1]
        # fusepy's float: tv_sec + tv_nsec / 1e9 (ns / 1e9 rounds differently)
        times: Any = (atime_ns, mtime_ns) if use_ns else (
            atime_ns // _NS + atime_ns % _NS / 1e9, mtime_ns // _NS + mtime_ns % _NS / 1e9)
        check(fn(p, times))
    return utimens


def _open(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
          decode: Any) -> Any:
    fn = calls[name]

    if raw_fi:
        def open(self: Any, path: str, flags: int) -> Any:
            fi = RawFileInfo(flags)
            check(fn(decode(path) if decode else path, fi))
            return _fh_out(self, fi)
    else:
        def open(self: Any, path: str, flags: int) -> Any:
            fh = fn(decode(path) if decode else path, flags)
            return int(fh or 0) & 0xFFFFFFFFFFFFFFFF  # fusepy stores it in a uint64_t
    return open


def _create(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
            decode: Any) -> Any:
    fn = calls[name]  # takes the flags, or not, as the original passes them (_as_called)

    def create(self: Any, path: str, mode: int, flags: int) -> Any:
        p = decode(path) if decode else path
        if raw_fi:
            fi = RawFileInfo(flags)
            check(fn(p, mode, fi))
            return _fh_out(self, fi)
        fh = fn(p, mode, flags)
        return int(fh or 0) & 0xFFFFFFFFFFFFFFFF
    return create


def _read(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
          decode: Any) -> Any:
    fn = calls[name]

    if not raw_fi and decode is None:
        def read(self: Any, path: str, size: int, offset: int, fh: int) -> Any:
            r = fn(path, size, offset, fh)
            if type(r) is int:
                check(r)
                return b""
            return r or b""
    else:
        def read(self: Any, path: str, size: int, offset: int, fh: int) -> Any:
            r = fn(decode(path) if decode else path, size, offset,
                   self._fi(fh) if raw_fi else fh)
            if type(r) is int:
                check(r)
                return b""
            return r or b""
    return read


def _write(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
           decode: Any) -> Any:
    fn = calls[name]

    def write(self: Any, path: str, data: memoryview, offset: int, fh: int) -> int:
        # fusepy passes bytes (ctypes.string_at): filesystems concatenate and decode them
        r = fn(decode(path) if decode else path, bytes(data), offset,
               self._fi(fh) if raw_fi else fh)
        check(r)
        return int(r)
    return write


def _statfs(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
            decode: Any) -> Any:
    fn = calls[name]

    def statfs(self: Any, path: str) -> StatVFS:
        return to_statvfs(fn(decode(path) if decode else path))
    return statfs


def _release(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
             decode: Any) -> Any:
    fn = calls[name]

    def release(self: Any, path: str, fh: int) -> None:
        if raw_fi:
            fi = self._fi(fh)
            self._files.pop(fh, None)
            check(fn(decode(path) if decode and path else path, fi))
        else:
            check(fn(decode(path) if decode and path else path, fh))
    return release


def _setxattr(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
              decode: Any) -> Any:
    fn = calls[name]

    def setxattr(self: Any, path: str, xname: str, value: bytes, flags: int) -> None:
        check(fn(decode(path) if decode else path, xname, bytes(value), flags))
    return setxattr


def _getxattr(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
              decode: Any) -> Any:
    fn = calls[name]

    def getxattr(self: Any, path: str, xname: str) -> bytes:
        r = fn(decode(path) if decode else path, xname)
        if type(r) is int:
            check(r)
        if isinstance(r, str):  # fusepy's ctypes.create_string_buffer refuses it: EINVAL
            raise TypeError(f"getxattr must return bytes, not str ({r!r:.40})")
        return bytes(r)
    return getxattr


def _listxattr(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
               decode: Any) -> Any:
    fn = calls[name]

    def listxattr(self: Any, path: str) -> Any:
        return fn(decode(path) if decode else path) or []
    return listxattr


def _opendir(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
             decode: Any) -> Any:
    fn = calls[name]

    def opendir(self: Any, path: str) -> int:
        return int(fn(decode(path) if decode else path) or 0) & 0xFFFFFFFFFFFFFFFF
    return opendir


def _dir_fh(pyname: str) -> Any:
    """releasedir(path, fh) and fsyncdir(path, datasync, fh): raw_fi does not apply."""
    def maker(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
              decode: Any) -> Any:
        fn = calls[name]

        def method(self: Any, path: str, *args: Any) -> None:
            check(fn(decode(path) if decode and path else path, *args))
        method.__name__ = pyname
        return method
    return maker


def _init(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
          decode: Any) -> Any:
    with_config = calls.get("init_with_config")
    fn = calls.get("init")

    def init(self: Any) -> None:
        if with_config is not None:
            with_config(None, None)  # libfuse's structs are not exposed: see docs/compat.md
        elif fn is not None:
            fn("/")
    return init


def _destroy(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
             decode: Any) -> Any:
    fn = calls[name]

    def destroy(self: Any) -> None:
        fn("/")
    return destroy


def _lock(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
          decode: Any) -> Any:
    fn = calls[name]

    def lock(self: Any, path: str, fh: int, cmd: int, lk: Any) -> None:
        check(fn(decode(path) if decode else path, self._fi(fh) if raw_fi else fh,
                  cmd, lk))
    return lock


def _flock(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
           decode: Any) -> Any:
    fn = calls[name]

    def flock(self: Any, path: str, fh: int, op: int) -> None:
        check(fn(decode(path) if decode else path, self._fi(fh) if raw_fi else fh, op))
    return flock


def _ioctl(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, wo: bool,
           decode: Any) -> Any:
    fn = calls[name]

    def ioctl(self: Any, path: str, cmd: int, arg: int, fh: int, flags: int, data: Any,
              out_size: int) -> Any:
        # as fusepy's c_void_p arguments: the addresses as ints, None for NULL; the handler
        # reads its input from data and writes its output there (libfuse replies that buffer)
        r = fn(decode(path) if decode else path, cmd, arg or None,
               self._fi(fh) if raw_fi else fh, flags,
               int(ffi.cast("uintptr_t", data)) or None)
        check(r)
        return r
    return ioctl


def _readdir(calls: dict[str, Any], name: str, raw_fi: bool, use_ns: bool, with_offset: bool,
             decode: Any) -> Any:
    fn = calls["readdir"] if "readdir" in calls else calls["readdir_with_offset"]

    def readdir(self: Any, path: str, offset: int, fh: int, plus: bool) -> Any:
        p = decode(path) if decode else path
        items = fn(p, offset, fh) if with_offset else fn(p, fh)
        if type(items) is int:
            check(items)
            return ()
        # converted a batch at a time, by the request that hands the batch out
        return Converted(items, functools.partial(_entries, self, p, with_offset))
    return readdir


_NAMES = {str}


def _entries(self: Any, path: str, with_offset: bool, items: list[Any], plus: bool
             ) -> list[Any]:
    """A batch of fusepy's readdir results as pyfuse entries: names, or (name, attrs, offset)
    tuples whose attrs (a dict, or mfusepy's bare mode int) give the entry's type, or, when
    they are full attributes, a readdirplus entry. For a READDIRPLUS request, entries without
    full attributes get them from the filesystem's getattr. A batch of bare names for a plain
    READDIR goes to C as it is."""
    names_only = set(map(type, items)) == _NAMES
    if not plus and names_only:
        return items
    use_ns = self._use_ns
    prefix = path if path.endswith("/") else path + "/"
    if names_only:  # readdirplus of bare names, the common case: getattr each
        getattr_ = self._getattr if self._plus_getattr else None
        if getattr_ is None:
            return items
        out: list[Any] = []
        append = out.append
        for name in items:
            if name == "." or name == "..":
                append(name)
                continue
            try:
                append((name, to_attr(getattr_(prefix + name, None), use_ns, "getattr")))
            except OSError:
                append(name)  # the kernel will look it up itself
        return out

    getattr_ = self._getattr if plus and self._plus_getattr else None
    out = []
    append = out.append
    for item in items:
        if type(item) is str:
            name, attrs, off = item, None, 0
        else:
            name, attrs, off = item
            if not with_offset:
                off = 0  # as mfusepy: offsets mean something only from readdir_with_offset
        attr: Any = None
        full = False
        if type(attrs) is int:
            attr = Attr(mode=attrs) if attrs else None
        elif attrs:
            attr = to_attr(attrs, use_ns, "readdir")
            full = not TYPE_ONLY.issuperset(attrs)
        if plus and not full:
            attr = None  # a type alone must not become the kernel's cached attributes
            if getattr_ is not None and name != "." and name != "..":
                try:
                    attr = to_attr(getattr_(prefix + name, None), use_ns, "getattr")
                except OSError:
                    pass  # the kernel will look it up itself
        append((name, attr, off) if off else (name, attr) if attr is not None else name)
    return out


#: fusepy operation -> (the pyfuse method it becomes, its maker). None: handled elsewhere.
METHODS: dict[str, tuple[Optional[str], Any]] = {
    "getattr": ("getattr", _getattr),
    "readlink": ("readlink", _readlink),
    "mknod": ("mknod", _path_only("mknod", 2)),
    "mkdir": ("mkdir", _path_only("mkdir", 1)),
    "unlink": ("unlink", _path_only("unlink", 0)),
    "rmdir": ("rmdir", _path_only("rmdir", 0)),
    "symlink": ("symlink", _two_paths("symlink")),
    "rename": ("rename", _rename),
    "link": ("link", _two_paths("link")),
    "chmod": ("chmod", _path_only("chmod", 1)),
    "chown": ("chown", _chown),
    "truncate": ("truncate", _truncate),
    "utimens": ("utimens", _utimens),
    "access": ("access", _path_only("access", 1)),
    "open": ("open", _open),
    "create": ("create", _create),
    "read": ("read", _read),
    "write": ("write", _write),
    "statfs": ("statfs", _statfs),
    "flush": ("flush", _with_fh("flush", 0)),
    "release": ("release", _release),
    "fsync": ("fsync", _with_fh("fsync", 1)),
    "fallocate": ("fallocate", _with_fh("fallocate", 3)),
    "lock": ("lock", _lock),
    "flock": ("flock", _flock),
    "ioctl": ("ioctl", _ioctl),
    "setxattr": ("setxattr", _setxattr),
    "getxattr": ("getxattr", _getxattr),
    "listxattr": ("listxattr", _listxattr),
    "removexattr": ("removexattr", _path_only("removexattr", 1)),
    "opendir": ("opendir", _opendir),
    "readdir": ("readdir", _readdir),
    "readdir_with_offset": (None, None),
    "releasedir": ("releasedir", _dir_fh("releasedir")),
    "fsyncdir": ("fsyncdir", _dir_fh("fsyncdir")),
    "init": ("init", _init),
    "init_with_config": (None, None),
    "destroy": ("destroy", _destroy),
}
