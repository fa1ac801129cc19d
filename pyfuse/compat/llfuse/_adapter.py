"""The inode-API filesystem that serves an llfuse one: each handler the llfuse class overrides
becomes a synchronous handler of :class:`pyfuse.lowlevel.Operations` that takes llfuse's
global lock (as llfuse does around every handler), calls it with llfuse's arguments (bytes
names, file handles, a RequestContext) and converts the result; a ``FUSEError`` becomes the
caller's errno. Only the overridden handlers exist, so only they are registered."""
from __future__ import annotations

import builtins
import errno
import os
import stat
import weakref
from typing import Any, Callable, Iterator, Optional

from ... import lowlevel as ll
from ...errors import FuseError
from ...types import FileInfo
from ..pyfuse3._types import (
    ENOATTR,
    FUSEError,
    LazyRequestContext,
    from_attr,
    request_context,
    setattr_fields,
    to_attr,
    to_entry,
    to_statvfs,
)

__all__ = ["adapt"]

_enc = os.fsencode
_dec = os.fsdecode
_ctx = request_context
_wref = weakref.ref


def _handlers(ops: Any, lock: Any) -> dict[str, Callable[..., Any]]:
    """The inode API's handler of each llfuse handler name; each holds ``lock`` while the
    filesystem's code runs."""
    h: dict[str, Callable[..., Any]] = {}

    def call(name: str, *args: Any) -> Any:
        method = builtins.getattr(ops, name)
        with lock:
            try:
                return method(*args)
            except FUSEError as e:
                raise FuseError(e.errno) from None

    def call_ctx(name: str, *args: Any) -> Any:
        """``call`` with the caller's ctx (lazy) as the last argument."""
        ctx = LazyRequestContext()
        kept = _wref(ctx)
        args += (ctx,)
        del ctx
        try:
            return call(name, *args)
        finally:
            del args
            c = kept()
            if c is not None:  # the handler kept it: fetch it while its request is served
                c.fetch()

    def lookup(self: Any, parent: int, name: str) -> ll.Entry:
        return to_entry(call_ctx("lookup", parent, _enc(name)), "lookup")
    h["lookup"] = lookup

    def forget(self: Any, ino: int, nlookup: int) -> None:
        call("forget", [(ino, nlookup)])
    h["forget"] = forget

    def getattr(self: Any, ino: int, fh: Optional[int]) -> ll.Entry:
        return to_entry(call_ctx("getattr", ino), "getattr")
    h["getattr"] = getattr

    def setattr(self: Any, ino: int, attr: Any, to_set: int, fh: Optional[int]) -> ll.Entry:
        return to_entry(call_ctx("setattr", ino, from_attr(attr), setattr_fields(to_set), fh),
                        "setattr")
    h["setattr"] = setattr

    def readlink(self: Any, ino: int) -> bytes:
        return bytes(call_ctx("readlink", ino))
    h["readlink"] = readlink

    def mknod(self: Any, parent: int, name: str, mode: int, rdev: int) -> ll.Entry:
        return to_entry(call_ctx("mknod", parent, _enc(name), mode, rdev), "mknod")
    h["mknod"] = mknod

    def mkdir(self: Any, parent: int, name: str, mode: int) -> ll.Entry:
        mode = (mode & ~stat.S_IFMT(0o177777)) | stat.S_IFDIR  # as llfuse: a directory's type
        return to_entry(call_ctx("mkdir", parent, _enc(name), mode), "mkdir")
    h["mkdir"] = mkdir

    def unlink(self: Any, parent: int, name: str) -> None:
        call_ctx("unlink", parent, _enc(name))
    h["unlink"] = unlink

    def rmdir(self: Any, parent: int, name: str) -> None:
        call_ctx("rmdir", parent, _enc(name))
    h["rmdir"] = rmdir

    def symlink(self: Any, target: str, parent: int, name: str) -> ll.Entry:
        return to_entry(call_ctx("symlink", parent, _enc(name), _enc(target)), "symlink")
    h["symlink"] = symlink

    def rename(self: Any, parent: int, name: str, newparent: int, newname: str,
               flags: int) -> None:
        if flags:  # llfuse's rename has no flags (libfuse 2): as its kernel, refuse them
            raise FuseError(errno.EINVAL)
        call_ctx("rename", parent, _enc(name), newparent, _enc(newname))
    h["rename"] = rename

    def link(self: Any, ino: int, newparent: int, newname: str) -> ll.Entry:
        return to_entry(call_ctx("link", ino, newparent, _enc(newname)), "link")
    h["link"] = link

    def open(self: Any, ino: int, flags: int) -> FileInfo:
        return FileInfo(int(call_ctx("open", ino, flags)), keep_cache=True)
    h["open"] = open

    def create(self: Any, parent: int, name: str, mode: int, flags: int) -> Any:
        fh, attr = call_ctx("create", parent, _enc(name), mode, flags)
        return to_entry(attr, "create"), FileInfo(int(fh), keep_cache=True)
    h["create"] = create

    def read(self: Any, ino: int, size: int, off: int, fh: int) -> bytes:
        return call("read", fh, off, size)  # type: ignore[no-any-return]
    h["read"] = read

    def write(self: Any, ino: int, data: Any, off: int, fh: int) -> int:
        return call("write", fh, off, bytes(data))  # type: ignore[no-any-return]
    h["write"] = write

    for name in ("flush", "release", "releasedir"):
        h[name] = (lambda n: lambda self, ino, fh: call(n, fh))(name)
    for name in ("fsync", "fsyncdir"):
        h[name] = (lambda n: lambda self, ino, datasync, fh: call(n, fh, datasync))(name)

    def opendir(self: Any, ino: int, flags: int) -> int:
        return int(call_ctx("opendir", ino))
    h["opendir"] = opendir

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
            yield _dec(name), to_attr(attr), nxt
    h["readdir"] = readdir

    def statfs(self: Any, ino: int) -> Any:
        return to_statvfs(call_ctx("statfs"))
    h["statfs"] = statfs

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

    def getxattr(self: Any, ino: int, name: str) -> bytes:
        return bytes(call_ctx("getxattr", ino, _enc(name)))
    h["getxattr"] = getxattr

    def listxattr(self: Any, ino: int) -> list[str]:
        return [_dec(n) for n in call_ctx("listxattr", ino)]
    h["listxattr"] = listxattr

    def removexattr(self: Any, ino: int, name: str) -> None:
        call_ctx("removexattr", ino, _enc(name))
    h["removexattr"] = removexattr

    def access(self: Any, ino: int, mask: int) -> None:
        if not call_ctx("access", ino, mask):
            raise FuseError(errno.EACCES)
    h["access"] = access

    def destroy(self: Any) -> None:
        call("destroy")
    h["destroy"] = destroy
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
