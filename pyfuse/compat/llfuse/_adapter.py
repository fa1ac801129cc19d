"""The inode-API filesystem that serves an llfuse one: each handler the llfuse class overrides
becomes a synchronous handler of :class:`pyfuse.lowlevel.Operations` that takes llfuse's
global lock (as llfuse does around every handler), calls it with llfuse's arguments (bytes
names, file handles, a RequestContext) and converts the result; a ``FUSEError`` becomes the
caller's errno. Only the overridden handlers exist, so only they are registered."""
from __future__ import annotations

import builtins
import errno
import os
import re
import stat
import sys
import threading
from typing import Any, Callable, Iterator

from ... import lowlevel as ll
from ..._core.dispatch import define
from ...errors import FuseError
from ...types import FileInfo
from ..pyfuse3._types import (
    ENOATTR,
    FUSEError,
    LazyRequestContext,
    from_attr,
    packed_attr,
    request_context,
    setattr_fields,
    to_entry,
    to_statvfs,
)

__all__ = ["adapt"]

_enc = os.fsencode
_dec = os.fsdecode
_ctx = request_context


# Each handler is compiled from one body (as pyfuse's own callbacks are, see
# pyfuse.lowlevel._callbacks): take llfuse's lock inline (Lock.__enter__'s checks, no call of
# it), call the filesystem's method by name (looked up at each call, as llfuse does) with
# llfuse's arguments, let go of the lock (Lock.__exit__'s checks) and convert the result. With
# ``ctx``, a lazy RequestContext is the last argument, fetched before the reply if the method
# kept it. One Python frame between the callback and the filesystem's method.
_BODY = """\
def {name}(self{params}):
{pre}{ctx_pre}    _me = _ident()
    if _L._owner == _me:
        raise RuntimeError("Global lock cannot be acquired more than once")
    _acquire()
    _L._owner = _me
    try:
        _r = _ops.{name}({args})
    except _FUSEError as _e:
        raise _FuseError(_e.errno) from None
    finally:
        if _L._owner != _me:
            raise RuntimeError("Lock can only be released by the holding thread")
        _L._owner = None
        _release()
{ctx_post}    return {result}
"""
_CTX_PRE = """\
    _ctx = _new(_Lazy)
"""
_CTX_POST = """\
        if _refs(_ctx) > _BASE:  # the method kept it: fetched while its request is served
            _ctx.fetch()
"""
#: (handler name, the inode API's parameters, llfuse's arguments, whether a ctx is appended to
#: them, what is returned (of the method's result ``_r``), code run first)
_SPECS: list[tuple[str, str, str, bool, str, str]] = [
    ("lookup", "parent, name", "parent, _enc(name)", True, '_entry(_r, "lookup")', ""),
    ("forget", "ino, nlookup", "[(ino, nlookup)]", False, "None", ""),
    ("getattr", "ino, fh", "ino", True, '_entry(_r, "getattr")', ""),
    ("setattr", "ino, attr, to_set, fh",
     "ino, _from_attr(attr), _fields(to_set), fh", True, '_entry(_r, "setattr")', ""),
    ("readlink", "ino", "ino", True, "bytes(_r)", ""),
    ("mknod", "parent, name, mode, rdev", "parent, _enc(name), mode, rdev", True,
     '_entry(_r, "mknod")', ""),
    # as llfuse: a directory's type in the mode
    ("mkdir", "parent, name, mode", "parent, _enc(name), mode", True,
     '_entry(_r, "mkdir")', "    mode = (mode & ~_S_IFMT) | _S_IFDIR\n"),
    ("unlink", "parent, name", "parent, _enc(name)", True, "None", ""),
    ("rmdir", "parent, name", "parent, _enc(name)", True, "None", ""),
    ("symlink", "target, parent, name", "parent, _enc(name), _enc(target)", True,
     '_entry(_r, "symlink")', ""),
    # llfuse's rename has no flags (libfuse 2): as its kernel, refuse them
    ("rename", "parent, name, newparent, newname, flags",
     "parent, _enc(name), newparent, _enc(newname)", True, "None",
     "    if flags:\n        raise _FuseError(_EINVAL)\n"),
    ("link", "ino, newparent, newname", "ino, newparent, _enc(newname)", True,
     '_entry(_r, "link")', ""),
    ("open", "ino, flags", "ino, flags", True, "_FileInfo(int(_r), keep_cache=True)", ""),
    ("create", "parent, name, mode, flags", "parent, _enc(name), mode, flags", True,
     "_created(_r)", ""),
    ("read", "ino, size, off, fh", "fh, off, size", False, "_r", ""),
    ("write", "ino, data, off, fh", "fh, off, bytes(data)", False, "_r", ""),
    ("flush", "ino, fh", "fh", False, "None", ""),
    ("release", "ino, fh", "fh", False, "None", ""),
    ("releasedir", "ino, fh", "fh", False, "None", ""),
    ("fsync", "ino, datasync, fh", "fh, datasync", False, "None", ""),
    ("fsyncdir", "ino, datasync, fh", "fh, datasync", False, "None", ""),
    ("opendir", "ino, flags", "ino", True, "int(_r)", ""),
    ("statfs", "ino", "", True, "_statvfs(_r)", ""),
    ("getxattr", "ino, name", "ino, _enc(name)", True, "bytes(_r)", ""),
    ("listxattr", "ino", "ino", True, "[_dec(n) for n in _r]", ""),
    ("removexattr", "ino, name", "ino, _enc(name)", True, "None", ""),
    ("access", "ino, mask", "ino, mask", True, "_allowed(_r)", ""),
    ("destroy", "", "", False, "None", ""),
]


def _unkept() -> int:
    """What ``sys.getrefcount`` says of an object only a local variable holds."""
    o = object()
    return sys.getrefcount(o)


def _created(r: Any) -> Any:
    fh, attr = r
    return to_entry(attr, "create"), FileInfo(int(fh), keep_cache=True)


def _allowed(ok: Any) -> None:
    if not ok:
        raise FuseError(errno.EACCES)


def _handlers(ops: Any, lock: Any) -> dict[str, Callable[..., Any]]:
    """The inode API's handler of each llfuse handler name; each holds ``lock`` while the
    filesystem's code runs."""
    namespace: dict[str, Any] = {
        "_ops": ops, "_L": lock, "_ident": threading.get_ident,
        "_acquire": lock._lock.acquire, "_release": lock._lock.release,
        "_FUSEError": FUSEError, "_FuseError": FuseError, "_EINVAL": errno.EINVAL,
        "_Lazy": LazyRequestContext, "_new": object.__new__, "_refs": sys.getrefcount,
        "_BASE": _unkept(),
        "_FSENC": sys.getfilesystemencoding(), "_FSERR": sys.getfilesystemencodeerrors(),
        "_dec": _dec,
        "_entry": to_entry, "_from_attr": from_attr, "_fields": setattr_fields,
        "_FileInfo": FileInfo, "_created": _created, "_statvfs": to_statvfs,
        "_allowed": _allowed, "_S_IFMT": stat.S_IFMT(0o177777), "_S_IFDIR": stat.S_IFDIR}
    h: dict[str, Callable[..., Any]] = {}
    for name, params, args, ctx, result, pre in _SPECS:
        # names encoded inline, as os.fsencode does (one Python frame fewer)
        args = re.sub(r"_enc\((\w+)\)", r"\1.encode(_FSENC, _FSERR)", args)
        src = _BODY.format(
            name=name, params=f", {params}" if params else "",
            args=(f"{args}, _ctx" if args else "_ctx") if ctx else args,
            result=result, pre=pre, ctx_pre=_CTX_PRE if ctx else "",
            ctx_post=_CTX_POST if ctx else "")
        h[name] = define(src, name, f"<pyfuse.compat llfuse handler {name}>", dict(namespace))

    def call(name: str, *args: Any) -> Any:
        with lock:
            try:
                return builtins.getattr(ops, name)(*args)
            except FUSEError as e:
                raise FuseError(e.errno) from None

    def readdir(self: Any, ino: int, offset: int, fh: int, plus: bool) -> Iterator[Any]:
        """llfuse's generator of (name, attr, next offset), pulled under the lock."""
        it = call("readdir", fh, offset)
        while True:
            with lock:
                try:
                    name, attr, nxt = next(it)
                except StopIteration:
                    return
                except FUSEError as e:
                    raise FuseError(e.errno) from None
            # the name's bytes as they are (the listing joins them so)
            yield name if type(name) is bytes else _enc(name), packed_attr(attr), nxt
    h["readdir"] = readdir

    def setxattr(self: Any, ino: int, name: str, value: bytes, flags: int) -> None:
        bname, ctx = _enc(name), _ctx()
        if flags & os.XATTR_CREATE:  # as llfuse: checked with getxattr
            try:
                call("getxattr", ino, bname, ctx)
            except FuseError as e:
                if e.errno != ENOATTR:
                    raise
            else:
                raise FuseError(errno.EEXIST)
        elif flags & os.XATTR_REPLACE:
            call("getxattr", ino, bname, ctx)
        call("setxattr", ino, bname, value, ctx)
    h["setxattr"] = setxattr
    return h


def adapt(ops: Any, lock: Any) -> ll.Operations:
    """An inode-API filesystem serving the llfuse filesystem ``ops`` under ``lock``."""
    from . import Operations

    cls = type(ops)
    names = {name for name, base in vars(Operations).items()
             if callable(base) and not name.startswith("_")
             and builtins.getattr(cls, name, base) is not base}
    namespace: dict[str, Any] = {name: fn for name, fn in _handlers(ops, lock).items()
                                 if name in names}

    def init(self: Any) -> None:
        with lock:
            ops.init()
    namespace["init"] = init
    return type(f"Llfuse{cls.__name__}", (ll.Operations,), namespace)()  # type: ignore
