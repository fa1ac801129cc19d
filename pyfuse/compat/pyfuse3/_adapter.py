"""The inode-API filesystem that serves a pyfuse3 one: each handler the pyfuse3 class
overrides becomes an ``async def`` handler of :class:`pyfuse.lowlevel.Operations` that calls
it with pyfuse3's arguments (bytes names, file handles, a RequestContext) and converts the
result; a ``FUSEError`` becomes the caller's errno. Only the overridden handlers exist, so
only they are registered (as pyfuse3 answers ENOSYS for the rest, libfuse does). Names
arrive as the kernel's bytes (the session's ``_bytes_names``, set by ``init``) and are handed
on as they are."""
from __future__ import annotations

import builtins
import errno
import os
import stat
from typing import Any, Callable, Optional

from ... import lowlevel as ll
from ..._core.readdir import READDIR_BATCH
from ...errors import FuseError
from ._ops import Operations
from ._types import (
    ENOATTR,
    FUSEError,
    ReaddirToken,
    from_attr,
    request_context,
    setattr_fields,
    to_entry,
    to_fileinfo,
    to_statvfs,
)

__all__ = ["adapt"]

_dec = os.fsdecode
_ctx = request_context


def _err(e: FUSEError) -> FuseError:
    return FuseError(e.errno)


def _handlers(ops: Any) -> dict[str, Callable[..., Any]]:
    """The inode API's handler of each pyfuse3 handler name."""
    h: dict[str, Callable[..., Any]] = {}

    async def lookup(self: Any, parent: int, name: str) -> ll.Entry | bytes:
        try:
            return to_entry(await ops.lookup(parent, name, _ctx()), "lookup")
        except FUSEError as e:
            raise _err(e) from None
    h["lookup"] = lookup

    async def _forget(ino: int, nlookup: int) -> None:
        await ops.forget([(ino, nlookup)])

    def forget(self: Any, ino: int, nlookup: int) -> Any:
        return _forget(ino, nlookup)  # a coroutine: run on the event loop, no reply
    h["forget"] = forget

    async def getattr(self: Any, ino: int, fh: Optional[int]) -> ll.Entry | bytes:
        try:
            return to_entry(await ops.getattr(ino, _ctx()), "getattr")
        except FUSEError as e:
            raise _err(e) from None
    h["getattr"] = getattr

    async def setattr(self: Any, ino: int, attr: Any, to_set: int, fh: Optional[int]) -> Any:
        try:
            return to_entry(await ops.setattr(ino, from_attr(attr), setattr_fields(to_set),
                                              fh, _ctx()), "setattr")
        except FUSEError as e:
            raise _err(e) from None
    h["setattr"] = setattr

    async def readlink(self: Any, ino: int) -> bytes:
        try:
            return bytes(await ops.readlink(ino, _ctx()))
        except FUSEError as e:
            raise _err(e) from None
    h["readlink"] = readlink

    async def mknod(self: Any, parent: int, name: str, mode: int, rdev: int) -> ll.Entry | bytes:
        try:
            return to_entry(await ops.mknod(parent, name, mode, rdev, _ctx()), "mknod")
        except FUSEError as e:
            raise _err(e) from None
    h["mknod"] = mknod

    async def mkdir(self: Any, parent: int, name: str, mode: int) -> ll.Entry | bytes:
        mode = (mode & ~stat.S_IFMT(0o177777)) | stat.S_IFDIR  # as pyfuse3: a directory's type
        try:
            return to_entry(await ops.mkdir(parent, name, mode, _ctx()), "mkdir")
        except FUSEError as e:
            raise _err(e) from None
    h["mkdir"] = mkdir

    async def unlink(self: Any, parent: int, name: str) -> None:
        try:
            await ops.unlink(parent, name, _ctx())
        except FUSEError as e:
            raise _err(e) from None
    h["unlink"] = unlink

    async def rmdir(self: Any, parent: int, name: str) -> None:
        try:
            await ops.rmdir(parent, name, _ctx())
        except FUSEError as e:
            raise _err(e) from None
    h["rmdir"] = rmdir

    async def symlink(self: Any, target: str, parent: int, name: str) -> ll.Entry | bytes:
        try:
            return to_entry(await ops.symlink(parent, name, target, _ctx()),
                            "symlink")
        except FUSEError as e:
            raise _err(e) from None
    h["symlink"] = symlink

    async def rename(self: Any, parent: int, name: str, newparent: int, newname: str,
                     flags: int) -> None:
        try:
            await ops.rename(parent, name, newparent, newname, flags, _ctx())
        except FUSEError as e:
            raise _err(e) from None
    h["rename"] = rename

    async def link(self: Any, ino: int, newparent: int, newname: str) -> ll.Entry | bytes:
        try:
            return to_entry(await ops.link(ino, newparent, newname, _ctx()), "link")
        except FUSEError as e:
            raise _err(e) from None
    h["link"] = link

    async def open(self: Any, ino: int, flags: int) -> Any:
        try:
            return to_fileinfo(await ops.open(ino, flags, _ctx()), "open")
        except FUSEError as e:
            raise _err(e) from None
    h["open"] = open

    async def create(self: Any, parent: int, name: str, mode: int, flags: int) -> Any:
        try:
            fi, attr = await ops.create(parent, name, mode, flags, _ctx())
        except FUSEError as e:
            raise _err(e) from None
        return to_entry(attr, "create"), to_fileinfo(fi, "create")
    h["create"] = create

    async def read(self: Any, ino: int, size: int, off: int, fh: int) -> bytes:
        try:
            return await ops.read(fh, off, size)  # type: ignore[no-any-return]
        except FUSEError as e:
            raise _err(e) from None
    h["read"] = read

    async def write(self: Any, ino: int, data: bytes, off: int, fh: int) -> int:
        try:
            return await ops.write(fh, off, data)  # type: ignore[no-any-return]
        except FUSEError as e:
            raise _err(e) from None
    h["write"] = write

    def _fh_only(name: str, with_datasync: bool) -> Callable[..., Any]:
        method = builtins.getattr(ops, name)  # (this scope's getattr is the handler)
        if with_datasync:
            async def handler(self: Any, ino: int, datasync: bool, fh: int) -> None:
                try:
                    await method(fh, datasync)
                except FUSEError as e:
                    raise _err(e) from None
        else:
            async def handler(self: Any, ino: int, fh: int) -> None:  # type: ignore[misc]
                try:
                    await method(fh)
                except FUSEError as e:
                    raise _err(e) from None
        handler.__name__ = name
        return handler

    for name in ("flush", "release", "releasedir"):
        h[name] = _fh_only(name, False)
    for name in ("fsync", "fsyncdir"):
        h[name] = _fh_only(name, True)

    async def opendir(self: Any, ino: int, flags: int) -> int:
        try:
            return int(await ops.opendir(ino, _ctx()))
        except FUSEError as e:
            raise _err(e) from None
    h["opendir"] = opendir

    async def readdir(self: Any, ino: int, offset: int, fh: int, plus: bool) -> Any:
        """pyfuse3's protocol (readdir_reply until it answers False), a batch a call: an async
        generator the readdir engine streams across requests."""
        start = offset
        while True:
            token = ReaddirToken(READDIR_BATCH)
            try:
                await ops.readdir(fh, start, token)
            except FUSEError as e:
                raise _err(e) from None
            if not token.entries:
                return
            yield token.batch()
            start = token.entries[-1][2]
            if len(token.entries) < token.room:
                return
    h["readdir"] = readdir

    async def statfs(self: Any, ino: int) -> Any:
        try:
            return to_statvfs(await ops.statfs(_ctx()))
        except FUSEError as e:
            raise _err(e) from None
    h["statfs"] = statfs

    async def setxattr(self: Any, ino: int, name: str, value: bytes, flags: int) -> None:
        bname, ctx = name, _ctx()
        try:
            if flags & os.XATTR_CREATE:  # as pyfuse3: checked with getxattr
                try:
                    await ops.getxattr(ino, bname, ctx)
                except FUSEError as e:
                    if e.errno != ENOATTR:
                        raise
                else:
                    raise FUSEError(errno.EEXIST)
            elif flags & os.XATTR_REPLACE:
                await ops.getxattr(ino, bname, ctx)
            await ops.setxattr(ino, bname, value, ctx)
        except FUSEError as e:
            raise _err(e) from None
    h["setxattr"] = setxattr

    async def getxattr(self: Any, ino: int, name: str) -> bytes:
        try:
            return bytes(await ops.getxattr(ino, name, _ctx()))
        except FUSEError as e:
            raise _err(e) from None
    h["getxattr"] = getxattr

    async def listxattr(self: Any, ino: int) -> list[str]:
        try:
            return [_dec(n) for n in await ops.listxattr(ino, _ctx())]
        except FUSEError as e:
            raise _err(e) from None
    h["listxattr"] = listxattr

    async def removexattr(self: Any, ino: int, name: str) -> None:
        try:
            await ops.removexattr(ino, name, _ctx())
        except FUSEError as e:
            raise _err(e) from None
    h["removexattr"] = removexattr

    async def poll(self: Any, ino: int, fh: int, handle: Any) -> int:
        try:  # pyfuse's PollHandle is pyfuse3's: keep it, notify() when readiness changes
            return int(await ops.poll(ino, fh, handle, _ctx()) or 0)
        except FUSEError as e:
            raise _err(e) from None
    h["poll"] = poll

    async def access(self: Any, ino: int, mask: int) -> None:
        try:
            ok = await ops.access(ino, mask, _ctx())
        except FUSEError as e:
            raise _err(e) from None
        if not ok:
            raise FuseError(errno.EACCES)
    h["access"] = access
    return h


def adapt(ops: Any) -> ll.Operations:
    """An inode-API filesystem serving the pyfuse3 filesystem ``ops``."""
    cls = type(ops)
    names = {name for name, base in vars(Operations).items()
             if callable(base) and not name.startswith("_")
             and getattr(cls, name, base) is not base}
    namespace: dict[str, Any] = {name: fn for name, fn in _handlers(ops).items()
                                 if name in names}

    def init(self: Any) -> None:
        ops.init()
    namespace["init"] = init
    return type(f"Pyfuse3{cls.__name__}", (ll.Operations,), namespace)()  # type: ignore
