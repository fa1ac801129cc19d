"""The inode API's :class:`Operations`: override the methods your filesystem supports.

The filesystem owns inode numbers. The kernel names everything by inode (``ino``; the root
is :data:`ROOT_INO`) and by ``(parent, name)``; names are ``str`` (decoded as
:func:`os.fsdecode` does, so names that are not UTF-8 survive a round trip).

**Lookup counts.** Every reply that hands the kernel an inode (``lookup``, ``mknod``,
``mkdir``, ``symlink``, ``link``, ``create``, and each readdirplus entry with attributes but
"." and "..") gives the kernel one *lookup* of it, which pyfuse counts
(:meth:`Session.lookups`). The kernel gives them back with ``forget(ino, nlookup)``; once an
inode's count is back to 0 the kernel no longer knows it, and an inode that has no names left
(unlinked) can be freed then. See docs/lowlevel.md.

**Async.** Any method may be ``async def``: it then runs on an event loop (pyfuse's own asyncio
loop with :func:`run`/:func:`mount`; the caller's, asyncio or trio, with :func:`serve`/
:func:`serving`) while libfuse's threads go on reading requests, and its reply is sent when it
finishes. When the caller is interrupted (a signal), the coroutine is cancelled and the caller
gets EINTR. Plain ``def`` methods run on the loop's threads, as in the path API.

Errors: raise :class:`pyfuse.FuseError` (or any OSError) with the errno the caller should
see; the policy is the path API's (:mod:`pyfuse.errors`). Results are the path API's value
types: :class:`pyfuse.Attr`, :class:`pyfuse.FileInfo`, :class:`pyfuse.DirEntry`, ... In the
signatures, ``MaybeAwaitable[X]`` is X, or (an ``async def`` method) the awaitable of it:
every method may be ``async def``. ``AttrLike`` is an Attr or an ``os.stat_result``. A method
typed ``-> None`` (``unlink``, ``rename``, ``flush``, ``release``, ``fsync``, ``setxattr``, ...)
succeeds whatever it returns.
"""
from __future__ import annotations

import errno
import os
from typing import Any, AsyncIterable, Awaitable, Iterable, NamedTuple, Optional, TypeVar, Union

from .._core.poll import PollHandle
from .._pyfuse_c import lib
from ..errors import FuseError
from ..types import Attr, DirEntry, FdRange, FileInfo, Lock, StatVFS

__all__ = ["Operations", "Entry", "ROOT_INO", "SET_MODE", "SET_UID", "SET_GID", "SET_SIZE",
           "SET_ATIME", "SET_MTIME", "SET_CTIME"]

#: The root directory's inode number.
ROOT_INO = 1

#: ``setattr``'s ``to_set`` bits: which fields of ``attr`` to change.
SET_MODE: int = lib.FUSE_SET_ATTR_MODE
SET_UID: int = lib.FUSE_SET_ATTR_UID
SET_GID: int = lib.FUSE_SET_ATTR_GID
SET_SIZE: int = lib.FUSE_SET_ATTR_SIZE
SET_ATIME: int = lib.FUSE_SET_ATTR_ATIME
SET_MTIME: int = lib.FUSE_SET_ATTR_MTIME
SET_CTIME: int = lib.FUSE_SET_ATTR_CTIME

T = TypeVar("T")
#: What a method returns, or, for an ``async def`` method, the awaitable of it.
MaybeAwaitable = Union[T, Awaitable[T]]
Buffer = Union[bytes, bytearray, memoryview]
AttrLike = Union[Attr, os.stat_result]


class Entry(NamedTuple):
    """What a method that hands the kernel an inode returns (a bare :class:`pyfuse.Attr` is
    taken as ``Entry(attr)``). ``attr.ino`` is the inode number (never 0) and ``attr.mode``
    must carry a file type. ``generation``: with ``ino``, unique over the filesystem's life
    (for NFS export; 0 is fine otherwise). Timeouts in seconds, finite and >= 0 (anything
    else is refused when the entry is replied: EIO and one logged error); None: the session's
    ``Config.entry_timeout`` / ``attr_timeout``."""

    attr: AttrLike
    generation: int = 0
    entry_timeout: Optional[float] = None
    attr_timeout: Optional[float] = None



def _enosys() -> FuseError:
    return FuseError(errno.ENOSYS)


class Operations:
    """Base class for an inode-based pyfuse filesystem. Only the methods a subclass overrides
    are registered; the defaults are never called."""

    # -- life cycle -------------------------------------------------------------------------
    def init(self) -> MaybeAwaitable[None]:
        """Called once when the kernel connection is set up, before any other request."""

    def destroy(self) -> MaybeAwaitable[None]:
        """Called once when the filesystem is unmounted, after the last request."""

    # -- names and inodes --------------------------------------------------------------------
    def lookup(self, parent: int, name: str) -> MaybeAwaitable[Union[Entry, AttrLike]]:
        """The inode named ``name`` in directory ``parent`` (counts one lookup). Raise
        ``FuseError(ENOENT)`` if there is none (cached for ``Config.negative_timeout``)."""
        raise _enosys()

    def forget(self, ino: int, nlookup: int) -> MaybeAwaitable[None]:
        """The kernel dropped ``nlookup`` lookups of ``ino`` (FORGET and BATCH_FORGET: a batch
        is one call into Python, this method once per inode). No reply; errors are logged."""

    def getattr(self, ino: int, fh: Optional[int]) -> MaybeAwaitable[Union[AttrLike, Entry]]:
        """The attributes of ``ino`` (``fh``: the open file's handle when the caller has one).
        An Entry's ``attr_timeout`` overrides the Config's."""
        raise _enosys()

    def setattr(self, ino: int, attr: Attr, to_set: int, fh: Optional[int]
                ) -> MaybeAwaitable[Union[AttrLike, Entry]]:
        """Change the fields of ``attr`` named by the ``to_set`` bits (``SET_MODE``, ``SET_UID``,
        ``SET_GID``, ``SET_SIZE``, ``SET_ATIME``, ``SET_MTIME``, ``SET_CTIME``; a time set to
        "now" arrives as the current time with its bit set) and return the new attributes."""
        raise _enosys()

    def readlink(self, ino: int) -> MaybeAwaitable[Union[str, bytes]]:
        """The target of the symbolic link ``ino``."""
        raise _enosys()

    def mknod(self, parent: int, name: str, mode: int,
        rdev: int) -> MaybeAwaitable[Union[Entry, AttrLike]]:
        """Create a file node (regular, device, FIFO, socket); returns its entry."""
        raise _enosys()

    def mkdir(self, parent: int, name: str, mode: int) -> MaybeAwaitable[Union[Entry, AttrLike]]:
        """Create a directory (``mode`` without the S_IFDIR bit); returns its entry."""
        raise _enosys()

    def unlink(self, parent: int, name: str) -> MaybeAwaitable[None]:
        """Remove a name. The inode lives on while the kernel holds lookups of it (an open
        file keeps working): free it when its nlink is 0 and forget brought its count to 0."""
        raise _enosys()

    def rmdir(self, parent: int, name: str) -> MaybeAwaitable[None]:
        """Remove an empty directory."""
        raise _enosys()

    def symlink(self, target: str, parent: int,
        name: str) -> MaybeAwaitable[Union[Entry, AttrLike]]:
        """Create the symbolic link ``name`` in ``parent`` pointing to ``target``."""
        raise _enosys()

    def rename(self, parent: int, name: str, newparent: int, newname: str, flags: int
               ) -> MaybeAwaitable[None]:
        """Rename (``flags``: ``RENAME_NOREPLACE``/``RENAME_EXCHANGE`` from renameat2(2))."""
        raise _enosys()

    def link(self, ino: int, newparent: int,
        newname: str) -> MaybeAwaitable[Union[Entry, AttrLike]]:
        """A new name for ``ino`` (a hard link: the same inode); returns its entry."""
        raise _enosys()

    def access(self, ino: int, mask: int) -> MaybeAwaitable[None]:
        """access(2) checks (not called with ``default_permissions``)."""
        raise _enosys()

    # -- files -----------------------------------------------------------------------------
    def open(self, ino: int, flags: int) -> MaybeAwaitable[Union[int, FileInfo, None]]:
        """Open ``ino``; returns a file handle (an int of 0..2**63-1: bit 63 is pyfuse's, for
        ``fd_backed`` files), a FileInfo, or None (handle 0). A synchronous handler's int or
        None is replied by C after the callback has returned."""
        raise _enosys()

    def create(self, parent: int, name: str, mode: int, flags: int
               ) -> MaybeAwaitable[tuple[Union[Entry, AttrLike], Union[int, FileInfo, None]]]:
        """Create and open a regular file: ``(entry, fh or FileInfo)``."""
        raise _enosys()

    def read(self, ino: int, size: int, offset: int, fh: int
             ) -> MaybeAwaitable[Union[Buffer, FdRange]]:
        """Up to ``size`` bytes at ``offset`` (fewer only at end of file), or a FdRange."""
        raise _enosys()

    def write(self, ino: int, data: memoryview, offset: int, fh: int) -> MaybeAwaitable[int]:
        """Write ``data`` at ``offset``; returns the bytes written. ``data`` is valid only
        during a synchronous call (an async ``write`` is given a copy)."""
        raise _enosys()

    def flush(self, ino: int, fh: int) -> MaybeAwaitable[None]:
        """close(2) of a descriptor of the open file (once per close, maybe several times)."""
        raise _enosys()

    def release(self, ino: int, fh: int) -> MaybeAwaitable[None]:
        """The last descriptor of the open file is closed."""
        raise _enosys()

    def fsync(self, ino: int, datasync: bool, fh: int) -> MaybeAwaitable[None]:
        """Flush the file to stable storage."""
        raise _enosys()

    def statfs(self, ino: int) -> MaybeAwaitable[Union[StatVFS, os.statvfs_result]]:
        """Filesystem statistics."""
        raise _enosys()

    def fallocate(self, ino: int, mode: int, offset: int, length: int,
        fh: int) -> MaybeAwaitable[None]:
        """fallocate(2)."""
        raise _enosys()

    def copy_file_range(self, ino_in: int, offset_in: int, fh_in: int, ino_out: int,
                        offset_out: int, fh_out: int, size: int, flags: int) -> MaybeAwaitable[int]:
        """Copy ``size`` bytes between open files; returns the bytes copied."""
        raise _enosys()

    def lseek(self, ino: int, offset: int, whence: int, fh: int) -> MaybeAwaitable[int]:
        """SEEK_DATA/SEEK_HOLE; returns the new offset."""
        raise _enosys()

    def getlk(self, ino: int, fh: int, lock: Lock) -> MaybeAwaitable[Lock]:
        """F_GETLK: the lock that would block ``lock`` (type F_UNLCK if none)."""
        raise _enosys()

    def setlk(self, ino: int, fh: int, lock: Lock, sleep: bool) -> MaybeAwaitable[None]:
        """F_SETLK (``sleep``: F_SETLKW). Without getlk/setlk the kernel keeps POSIX locks
        itself (local to this machine)."""
        raise _enosys()

    def flock(self, ino: int, fh: int, op: int) -> MaybeAwaitable[None]:
        """flock(2) (LOCK_SH/LOCK_EX/LOCK_UN, maybe | LOCK_NB)."""
        raise _enosys()

    def ioctl(self, ino: int, cmd: int, arg: int, fh: int, flags: int, data: Optional[bytes],
              out_size: int) -> MaybeAwaitable[Union[int, bytes, None]]:
        """A restricted ioctl (as the path API's): ``data`` is the caller's input for
        ``_IOW``/``_IOWR`` (else None); return bytes (at most ``out_size``) for the caller's
        buffer, an int result, or None (0). Raise ``ENOTTY`` for commands you do not know."""
        raise _enosys()

    def poll(self, ino: int, fh: int, handle: Optional[PollHandle]) -> MaybeAwaitable[int]:
        """Readiness of an open file (a mask of ``select.POLLIN`` etc.). When the caller will
        sleep, ``handle`` is a :class:`pyfuse.PollHandle`: keep it and call ``notify()`` when
        readiness changes (else it is None)."""
        raise _enosys()

    # -- extended attributes ---------------------------------------------------------------
    def setxattr(self, ino: int, name: str, value: bytes, flags: int) -> MaybeAwaitable[None]:
        """Set an extended attribute (``flags``: XATTR_CREATE/XATTR_REPLACE)."""
        raise _enosys()

    def getxattr(self, ino: int, name: str) -> MaybeAwaitable[bytes]:
        """An extended attribute's value (``FuseError(ENODATA)`` if there is none)."""
        raise _enosys()

    def listxattr(self, ino: int) -> MaybeAwaitable[Iterable[str]]:
        """The names of the extended attributes."""
        raise _enosys()

    def removexattr(self, ino: int, name: str) -> MaybeAwaitable[None]:
        """Remove an extended attribute."""
        raise _enosys()

    # -- directories -----------------------------------------------------------------------
    def opendir(self, ino: int, flags: int) -> MaybeAwaitable[Union[int, FileInfo, None]]:
        """Open a directory; returns a handle (int) for readdir/releasedir, None, or a
        :class:`pyfuse.FileInfo` whose ``keep_cache`` and ``cache_readdir`` let the kernel keep
        the listing it reads (docs/caching.md). With ``Config(no_open=True)`` a filesystem
        without ``opendir`` (and ``releasedir``) gets no OPENDIR request at all: the kernel
        then keeps its listings, and readdir gets ``fh`` 0."""
        raise _enosys()

    def readdir(self, ino: int, offset: int, fh: int, plus: bool
                ) -> Union[MaybeAwaitable[Iterable[Union[str, DirEntry, tuple[Any, ...]]]],
                           AsyncIterable[Any]]:
        """The entries of directory ``ino``: any iterable of names, :class:`pyfuse.DirEntry`
        or ``(name, attr[, offset[, ino]])`` tuples, under the path API's readdir contract
        (offset 0 for all: the whole listing at once; or non-zero *next* offsets for all).
        ``(name, attr, offset, ino)`` gives the entry the inode ``ino`` in place of
        ``attr.ino``: one ``attr`` template serves many children, packed once a batch (the
        cheapest form for a big directory).

        ``attr.ino`` is the child's inode number. When ``plus`` is true (READDIRPLUS) each
        entry with attributes also gives the kernel a lookup of the child, counted by pyfuse,
        saving it a LOOKUP request per name; entries without attributes are fine (the kernel
        looks them up). "." and ".." are not counted (the kernel ignores their attributes).
        An ``async def`` readdir may await to the iterable, or be an async generator (or
        return an async iterator): its entries are then fetched on the event loop a batch at
        a time and streamed across requests like a generator's; a yielded ``list`` is taken
        as a batch of entries (a page of a remote listing)."""
        raise _enosys()

    def releasedir(self, ino: int, fh: int) -> MaybeAwaitable[None]:
        """A directory opened with ``opendir`` is closed."""
        raise _enosys()

    def fsyncdir(self, ino: int, datasync: bool, fh: int) -> MaybeAwaitable[None]:
        """Flush directory contents to stable storage."""
        raise _enosys()


def implemented(ops: Any) -> set[str]:
    """The names of the Operations methods that ``ops``'s class overrides."""
    cls = type(ops)
    return {name for name, base in vars(Operations).items()
            if callable(base) and not name.startswith("_") and getattr(cls, name, base) is not base}
