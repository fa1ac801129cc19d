"""pyfuse3's Operations: the request handlers a pyfuse3 filesystem overrides (all ``async
def`` but ``init``), with pyfuse3's signatures: inode numbers, ``bytes`` names, a
:class:`RequestContext` last. The defaults answer ENOSYS (forget does nothing); only the
handlers a subclass overrides are registered with libfuse."""
from __future__ import annotations

import errno
from typing import Any, Optional, Sequence

from ._types import (
    EntryAttributes,
    FileHandleT,
    FileInfo,
    FileNameT,
    FlagT,
    FUSEError,
    InodeT,
    ModeT,
    ReaddirToken,
    RequestContext,
    SetattrFields,
    StatvfsData,
    XAttrNameT,
)

__all__ = ["Operations"]


def _enosys() -> FUSEError:
    return FUSEError(errno.ENOSYS)


class Operations:
    """Base class of a pyfuse3 filesystem (see pyfuse3's documentation of each handler)."""

    supports_dot_lookup: bool = True
    enable_writeback_cache: bool = False
    enable_acl: bool = False

    def init(self) -> None:
        """Called before the filesystem starts handling requests."""

    async def lookup(self, parent_inode: InodeT, name: FileNameT,
                     ctx: RequestContext) -> EntryAttributes:
        raise _enosys()

    async def forget(self, inode_list: Sequence[tuple[InodeT, int]]) -> None:
        pass

    async def getattr(self, inode: InodeT, ctx: RequestContext) -> EntryAttributes:
        raise _enosys()

    async def setattr(self, inode: InodeT, attr: EntryAttributes, fields: SetattrFields,
                      fh: Optional[FileHandleT], ctx: RequestContext) -> EntryAttributes:
        raise _enosys()

    async def readlink(self, inode: InodeT, ctx: RequestContext) -> FileNameT:
        raise _enosys()

    async def mknod(self, parent_inode: InodeT, name: FileNameT, mode: ModeT, rdev: int,
                    ctx: RequestContext) -> EntryAttributes:
        raise _enosys()

    async def mkdir(self, parent_inode: InodeT, name: FileNameT, mode: ModeT,
                    ctx: RequestContext) -> EntryAttributes:
        raise _enosys()

    async def unlink(self, parent_inode: InodeT, name: FileNameT, ctx: RequestContext) -> None:
        raise _enosys()

    async def rmdir(self, parent_inode: InodeT, name: FileNameT, ctx: RequestContext) -> None:
        raise _enosys()

    async def symlink(self, parent_inode: InodeT, name: FileNameT, target: FileNameT,
                      ctx: RequestContext) -> EntryAttributes:
        raise _enosys()

    async def rename(self, parent_inode_old: InodeT, name_old: FileNameT,
                     parent_inode_new: InodeT, name_new: FileNameT, flags: FlagT,
                     ctx: RequestContext) -> None:
        raise _enosys()

    async def link(self, inode: InodeT, new_parent_inode: InodeT, new_name: FileNameT,
                   ctx: RequestContext) -> EntryAttributes:
        raise _enosys()

    async def open(self, inode: InodeT, flags: FlagT, ctx: RequestContext) -> FileInfo:
        raise _enosys()

    async def read(self, fh: FileHandleT, off: int, size: int) -> bytes:
        raise _enosys()

    async def write(self, fh: FileHandleT, off: int, buf: bytes) -> int:
        raise _enosys()

    async def flush(self, fh: FileHandleT) -> None:
        raise _enosys()

    async def release(self, fh: FileHandleT) -> None:
        raise _enosys()

    async def fsync(self, fh: FileHandleT, datasync: bool) -> None:
        raise _enosys()

    async def poll(self, inode: InodeT, fh: FileHandleT, poll_handle: Any,
                   ctx: RequestContext) -> int:
        raise _enosys()

    async def opendir(self, inode: InodeT, ctx: RequestContext) -> FileHandleT:
        raise _enosys()

    async def readdir(self, fh: FileHandleT, start_id: int, token: ReaddirToken) -> None:
        raise _enosys()

    async def releasedir(self, fh: FileHandleT) -> None:
        raise _enosys()

    async def fsyncdir(self, fh: FileHandleT, datasync: bool) -> None:
        raise _enosys()

    async def statfs(self, ctx: RequestContext) -> StatvfsData:
        raise _enosys()

    def stacktrace(self) -> None:
        """pyfuse3 dumps the tasks' stack traces on a read of ``.pyfuse3_stacktrace``: not
        offered here."""

    async def setxattr(self, inode: InodeT, name: XAttrNameT, value: bytes,
                       ctx: RequestContext) -> None:
        raise _enosys()

    async def getxattr(self, inode: InodeT, name: XAttrNameT, ctx: RequestContext) -> bytes:
        raise _enosys()

    async def listxattr(self, inode: InodeT, ctx: RequestContext) -> Sequence[XAttrNameT]:
        raise _enosys()

    async def removexattr(self, inode: InodeT, name: XAttrNameT, ctx: RequestContext) -> None:
        raise _enosys()

    async def access(self, inode: InodeT, mode: ModeT, ctx: RequestContext) -> bool:
        raise _enosys()

    async def create(self, parent_inode: InodeT, name: FileNameT, mode: ModeT, flags: FlagT,
                     ctx: RequestContext) -> tuple[FileInfo, EntryAttributes]:
        raise _enosys()
