"""The inode-API filesystem that serves an llfuse one: each handler the llfuse class overrides
becomes a synchronous handler of :class:`pyfuse.lowlevel.Operations` that calls it with
llfuse's arguments (bytes names, file handles, a RequestContext) and converts the result; a
``FUSEError`` becomes the caller's errno. llfuse's global lock is held around each request by
pyfuse's C shim (as llfuse's own C code holds it), around init and destroy here. Only the
overridden handlers exist, so only they are registered. Names arrive as the kernel's bytes
(the session's ``_bytes_names``, set by :func:`init`) and are handed on as they are."""
from __future__ import annotations

import builtins
import errno
import os
import stat
import sys
from typing import Any, Callable, Iterator

from ... import lowlevel as ll
from ..._core.convert import ATTR_STRUCT, PackedAttr
from ..._core.dispatch import define
from ...errors import FuseError
from ...lowlevel._aio import _UNHELD
from ...types import FileInfo
from ..pyfuse3._types import (
    ENOATTR,
    EntryAttributes,
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

_dec = os.fsdecode
_ctx = request_context
#: A plain listing's attribute of each st_mode seen (its file type is all the kernel reads of
#: it there; the entry's inode number goes beside it), for valid modes only, at most _KINDS_MAX.
_KINDS: dict[int, PackedAttr] = {}
_KINDS_MAX = 256


def _kind(attr: Any) -> Any:
    """The plain-listing attribute of ``attr``'s mode, kept in _KINDS; for a mode that is not
    an int of 32 bits with a file type, ``attr`` packed whole, so that the listing refuses it
    by name as before (a mode of 0: no attributes, as ever)."""
    mode = attr.st_mode
    if type(mode) is not int or not 0 <= mode < 1 << 32 or not stat.S_IFMT(mode):
        return packed_attr(attr)
    kind = PackedAttr(ATTR_STRUCT.pack(mode, *bytes(11)))
    if len(_KINDS) < _KINDS_MAX:
        _KINDS[mode] = kind
    return kind


# Each handler is compiled from one body (as pyfuse's own callbacks are, see
# pyfuse.lowlevel._callbacks): call the filesystem's method by name (looked up at each call,
# as llfuse does) with llfuse's arguments and convert the result. llfuse's global lock is held
# around it by pyfuse's C shim (the session's lock, set by init: csrc/glock.c), as llfuse's
# own C code holds it. With ``ctx``, a lazy RequestContext is the last argument, fetched
# before the reply if the method kept it. One Python frame between the callback and the
# filesystem's method.
_BODY = """\
def {name}(self{params}):
{pre}{ctx_pre}    try:
        _r = _ops.{name}({args})
    except _FUSEError as _e:
        raise _FuseError(_e.errno) from None
{ctx_post}    return {result}
"""
# The lazy RequestContext is one object handed to request after request (``_C[0]``), its ids
# forgotten each time, unless something else holds it (a handler that let go of the lock and
# still runs, or a method that kept it: fetched while its request was served), when a new one
# takes its place. (Its references: ``_C``'s, if it is still there, this frame's and
# getrefcount's argument; _BASE is the last two.)
_CTX_PRE = """\
    _ctx = _C[0]
    if _refs(_ctx) > _BASE + 1:
        _ctx = _C[0] = _new(_Lazy)
    _ctx._ids = None
"""
_CTX_POST = """\
    finally:
        if _refs(_ctx) > _BASE + (_C[0] is _ctx):  # kept
            _ctx.fetch()
"""
#: An entry's result: an EntryAttributes as it is (the session packs it straight into the
#: thread's out struct: llfuse's init gives it serve_entries), anything else through to_entry
#: (a subclass's packed, anything else refused by name).
_ENTRY = '_r if _r.__class__ is _EA else _entry(_r, "%s")'
#: (handler name, the inode API's parameters, llfuse's arguments, whether a ctx is appended to
#: them, what is returned (of the method's result ``_r``), code run first)
_SPECS: list[tuple[str, str, str, bool, str, str]] = [
    ("lookup", "parent, name", "parent, name", True, _ENTRY % "lookup", ""),
    ("forget", "ino, nlookup", "[(ino, nlookup)]", False, "None", ""),
    ("getattr", "ino, fh", "ino", True, _ENTRY % "getattr", ""),
    ("setattr", "ino, attr, to_set, fh",
     "ino, _from_attr(attr), _fields(to_set), fh", True, _ENTRY % "setattr", ""),
    ("readlink", "ino", "ino", True, "bytes(_r)", ""),
    ("mknod", "parent, name, mode, rdev", "parent, name, mode, rdev", True,
     _ENTRY % "mknod", ""),
    # as llfuse: a directory's type in the mode
    ("mkdir", "parent, name, mode", "parent, name, mode", True,
     _ENTRY % "mkdir", "    mode = (mode & ~_S_IFMT) | _S_IFDIR\n"),
    ("unlink", "parent, name", "parent, name", True, "None", ""),
    ("rmdir", "parent, name", "parent, name", True, "None", ""),
    ("symlink", "target, parent, name", "parent, name, target", True,
     _ENTRY % "symlink", ""),
    # llfuse's rename has no flags (libfuse 2): as its kernel, refuse them
    ("rename", "parent, name, newparent, newname, flags",
     "parent, name, newparent, newname", True, "None",
     "    if flags:\n        raise _FuseError(_EINVAL)\n"),
    ("link", "ino, newparent, newname", "ino, newparent, newname", True,
     _ENTRY % "link", ""),
    ("open", "ino, flags", "ino, flags", True, "_FileInfo(int(_r), keep_cache=True)", ""),
    ("create", "parent, name, mode, flags", "parent, name, mode, flags", True,
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
    ("getxattr", "ino, name", "ino, name", True, "bytes(_r)", ""),
    ("listxattr", "ino", "ino", True, "[_dec(n) for n in _r]", ""),
    ("removexattr", "ino, name", "ino, name", True, "None", ""),
    ("access", "ino, mask", "ino, mask", True, "_allowed(_r)", ""),
]


def _created(r: Any) -> Any:
    fh, attr = r
    return to_entry(attr, "create"), FileInfo(int(fh), keep_cache=True)


def _allowed(ok: Any) -> None:
    if not ok:
        raise FuseError(errno.EACCES)


def _handlers(ops: Any) -> dict[str, Callable[..., Any]]:
    """The inode API's handler of each llfuse handler name (run inside llfuse's lock, which
    C takes around each request)."""
    namespace: dict[str, Any] = {
        "_ops": ops, "_FUSEError": FUSEError, "_FuseError": FuseError, "_EINVAL": errno.EINVAL,
        "_Lazy": LazyRequestContext, "_new": object.__new__, "_refs": sys.getrefcount,
        "_BASE": _UNHELD, "_C": [object.__new__(LazyRequestContext)],
        "_dec": _dec,
        "_entry": to_entry, "_EA": EntryAttributes, "_from_attr": from_attr,
        "_fields": setattr_fields,
        "_FileInfo": FileInfo, "_created": _created, "_statvfs": to_statvfs,
        "_allowed": _allowed, "_S_IFMT": stat.S_IFMT(0o177777), "_S_IFDIR": stat.S_IFDIR}
    h: dict[str, Callable[..., Any]] = {}
    for name, params, args, ctx, result, pre in _SPECS:
        src = _BODY.format(
            name=name, params=f", {params}" if params else "",
            args=(f"{args}, _ctx" if args else "_ctx") if ctx else args,
            result=result, pre=pre, ctx_pre=_CTX_PRE if ctx else "",
            ctx_post=_CTX_POST if ctx else "")
        h[name] = define(src, name, f"<pyfuse.compat llfuse handler {name}>", dict(namespace))

    def call(name: str, *args: Any) -> Any:
        try:
            return builtins.getattr(ops, name)(*args)
        except FUSEError as e:
            raise FuseError(e.errno) from None

    def readdir(self: Any, ino: int, offset: int, fh: int, plus: bool) -> Iterator[Any]:
        """llfuse's generator of (name, attr, next offset), pulled inside the readdir
        request (under the lock, which C holds around it). Names go on as they are (the
        listing joins bytes as they are and encodes a str as os.fsencode does). A plain
        listing (llfuse's kind: its mounts have no readdirplus, so every request of a
        listing is plain) gives the kernel each entry's inode number and file type and nothing
        else, so an entry is (name, its mode's attribute, offset, inode number)."""
        try:
            if plus:
                for name, attr, nxt in call("readdir", fh, offset):
                    yield name, packed_attr(attr), nxt
                return
            for name, attr, nxt in call("readdir", fh, offset):
                mode = attr.st_mode
                kind = _KINDS.get(mode) if type(mode) is int else None
                if kind is None:
                    kind = _kind(attr)
                yield name, kind, nxt, attr.st_ino
        except FUSEError as e:
            raise FuseError(e.errno) from None
    h["readdir"] = readdir

    def setxattr(self: Any, ino: int, name: str, value: bytes, flags: int) -> None:
        bname, ctx = name, _ctx()
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
    namespace: dict[str, Any] = {name: fn for name, fn in _handlers(ops).items()
                                 if name in names}

    # init and destroy are called outside any request (no lock taken by C): taken here
    def init(self: Any) -> None:
        with lock:
            ops.init()
    namespace["init"] = init

    def destroy(self: Any) -> None:
        with lock:
            ops.destroy()
    if "destroy" in names:
        namespace["destroy"] = destroy
    return type(f"Llfuse{cls.__name__}", (ll.Operations,), namespace)()  # type: ignore
