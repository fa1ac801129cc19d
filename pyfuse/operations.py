"""The :class:`Operations` base class: override the methods your filesystem supports.

Only the methods a subclass overrides are registered with libfuse; for the others the kernel
gets libfuse's default (usually ``ENOSYS``, which it then stops asking for) without a Python call.

Paths are ``str``, absolute within the mount (``"/"``, ``"/dir/file"``), decoded with the
filesystem encoding and ``surrogateescape`` (as :func:`os.fsdecode`), so names that are not UTF-8
survive a round trip through :func:`os.fsencode`. ``path`` is ``None`` only for operations on an
open file that was already unlinked under ``Config(hard_remove=True)``; use ``fh`` then.

``fh`` is the integer your ``open``/``create``/``opendir`` returned (0 if it returned ``None``),
or ``None`` in ``getattr``/``chmod``/``chown``/``truncate``/``utimens`` when the kernel asks about
a path rather than an open file.

Errors: raise :class:`pyfuse.FuseError` (or any :class:`OSError`) with the errno the caller should
see. See :mod:`pyfuse.errors` for the full policy. Handlers may run concurrently in the default
multi-threaded loop; protect shared state with a lock.
"""
from __future__ import annotations

import errno
import os
from typing import Any, Iterable, Optional, Union

from ._core.poll import PollHandle
from .errors import FuseError
from .types import Attr, DirEntry, FdRange, FileInfo, Lock, StatVFS

__all__ = ["Operations"]

Buffer = Union[bytes, bytearray, memoryview]


def _enosys() -> FuseError:
    return FuseError(errno.ENOSYS)


class Operations:
    """Base class for a pyfuse filesystem. Every method documents when the kernel calls it and
    what it may return; the defaults are never called (they are not registered)."""

    # -- life cycle -------------------------------------------------------------------------
    def init(self) -> None:
        """Called once when the kernel connection is set up, before any other request."""

    def destroy(self) -> None:
        """Called once when the filesystem is unmounted, after the last request."""

    # -- attributes and names ---------------------------------------------------------------
    def getattr(self, path: str, fh: Optional[int]) -> Union[Attr, os.stat_result]:
        """Attributes of ``path`` (``stat``/``lstat``/``fstat``; also every name lookup).

        Return an :class:`Attr` or an :class:`os.stat_result`; raise ``FuseError(ENOENT)`` for a
        name that does not exist. ``fh`` is set when the kernel asks about an open file."""
        raise _enosys()

    def readlink(self, path: str) -> Union[str, bytes]:
        """The target of the symbolic link ``path`` (``readlink(2)``)."""
        raise _enosys()

    def mknod(self, path: str, mode: int, rdev: int) -> None:
        """Create a non-directory node (regular file when ``create`` is absent, FIFO, socket,
        device); ``mode`` includes the file type bits, with the caller's umask applied."""
        raise _enosys()

    def mkdir(self, path: str, mode: int) -> None:
        """Create directory ``path``; ``mode`` has only permission bits, umask applied."""
        raise _enosys()

    def unlink(self, path: str) -> None:
        """Remove the non-directory ``path``."""
        raise _enosys()

    def rmdir(self, path: str) -> None:
        """Remove the empty directory ``path`` (``ENOTEMPTY`` otherwise)."""
        raise _enosys()

    def symlink(self, target: str, path: str) -> None:
        """Create a symbolic link at ``path`` whose content is ``target``."""
        raise _enosys()

    def rename(self, old: str, new: str, flags: int) -> None:
        """Rename ``old`` to ``new``. ``flags`` may hold ``RENAME_NOREPLACE`` (1: fail with
        ``EEXIST`` if ``new`` exists) or ``RENAME_EXCHANGE`` (2: swap the two); raise ``EINVAL``
        for flags you do not support."""
        raise _enosys()

    def link(self, old: str, new: str) -> None:
        """Create a hard link ``new`` to the existing ``old``."""
        raise _enosys()

    def chmod(self, path: str, mode: int, fh: Optional[int]) -> None:
        """Change the permission bits (``mode`` carries the file type bits too)."""
        raise _enosys()

    def chown(self, path: str, uid: int, gid: int, fh: Optional[int]) -> None:
        """Change owner and/or group; ``-1`` means "leave unchanged"."""
        raise _enosys()

    def truncate(self, path: str, size: int, fh: Optional[int]) -> None:
        """Change the size of a file (``truncate``, ``ftruncate``, ``O_TRUNC``)."""
        raise _enosys()

    def utimens(self, path: str, atime_ns: Optional[int], mtime_ns: Optional[int],
                fh: Optional[int]) -> None:
        """Set access and modification times in nanoseconds; ``None`` means leave that time
        unchanged (``UTIME_OMIT``). ``UTIME_NOW`` arrives already resolved to the current time."""
        raise _enosys()

    def access(self, path: str, mode: int) -> None:
        """Check access (``access(2)``, ``os.R_OK`` | ...); raise ``EACCES`` to deny. Not called
        with the ``default_permissions`` mount option."""
        raise _enosys()

    # -- files ------------------------------------------------------------------------------
    def open(self, path: str, flags: int) -> Union[int, FileInfo, None]:
        """Open ``path`` with ``open(2)`` ``flags``. ``O_CREAT``/``O_EXCL`` are handled by the
        kernel; ``O_TRUNC`` arrives here and the handler must truncate the file. Return a file
        handle (an int of 0..2**63-1 you choose, passed back as ``fh``; bit 63 is pyfuse's, for
        ``fd_backed`` files: a larger handle is EIO, logged), a :class:`FileInfo` to also set
        per-open flags, or ``None`` (``fh`` = 0)."""
        raise _enosys()

    def create(self, path: str, mode: int, flags: int) -> Union[int, FileInfo, None]:
        """Create and open the regular file ``path`` (``open(O_CREAT)`` of a new name);
        returns like :meth:`open`. Without it, the kernel uses ``mknod`` then ``open``."""
        raise _enosys()

    def read(self, path: str, size: int, offset: int, fh: int) -> Union[Buffer, FdRange]:
        """Up to ``size`` bytes from ``offset``: ``bytes``, ``bytearray``, ``memoryview`` or any
        buffer (copied once, into the reply), or an :class:`~pyfuse.FdRange` naming a file
        descriptor and offset to read them from without Python touching the data. Fewer bytes
        than asked means end of file (empty at or past the end). Returning more than ``size`` is
        an error (logged, ``EIO``)."""
        raise _enosys()

    def write(self, path: str, data: memoryview, offset: int, fh: int) -> int:
        """Write ``data`` at ``offset``; return the number of bytes written. ``data`` is a
        read-only view of libfuse's buffer, valid only during the call: copy what you keep
        (``bytes(data)`` or ``buf[a:b] = data``)."""
        raise _enosys()

    def write_fd(self, path: str, size: int, offset: int, fh: int) -> Optional[FdRange]:
        """Zero-copy writes: return ``FdRange(fd, pos)`` to have the ``size`` bytes written at
        ``offset`` copied (or spliced) by libfuse straight into ``fd`` at ``pos``; the request is
        answered with what that copy wrote. Return ``None`` to get the data through
        :meth:`write` instead."""
        raise _enosys()

    def statfs(self, path: str) -> Union[StatVFS, os.statvfs_result]:
        """File system statistics (``statvfs(2)``, ``df``)."""
        raise _enosys()

    def flush(self, path: str, fh: int) -> None:
        """Called on each ``close(2)`` of a file descriptor (may be several per open)."""
        raise _enosys()

    def release(self, path: str, fh: int) -> None:
        """The last reference to an open file is gone: free what ``open`` allocated. The return
        value and errors are ignored by the kernel."""
        raise _enosys()

    def fsync(self, path: str, datasync: bool, fh: int) -> None:
        """Flush file data (and metadata unless ``datasync``) to stable storage."""
        raise _enosys()

    def fallocate(self, path: str, mode: int, offset: int, length: int, fh: int) -> None:
        """Allocate (or, with ``mode`` flags such as ``FALLOC_FL_PUNCH_HOLE``, deallocate)
        space; ``mode`` 0 extends the file size when needed. Raise ``EOPNOTSUPP`` for modes you
        do not support."""
        raise _enosys()

    def copy_file_range(self, path_in: str, fh_in: int, offset_in: int, path_out: str,
                        fh_out: int, offset_out: int, size: int, flags: int) -> int:
        """Copy up to ``size`` bytes between two open files in this filesystem; return the count
        copied. Without it the kernel falls back to read and write."""
        raise _enosys()

    def lseek(self, path: str, offset: int, whence: int, fh: int) -> int:
        """Only ``SEEK_DATA``/``SEEK_HOLE`` reach the filesystem: return the resulting offset,
        or raise ``ENXIO`` past the end."""
        raise _enosys()

    def lock(self, path: str, fh: int, cmd: int, lock: Lock) -> None:
        """POSIX record locks (``fcntl`` ``F_GETLK``/``F_SETLK``/``F_SETLKW``). For ``F_GETLK``
        update ``lock`` in place. Without it, the kernel keeps locks local to this machine."""
        raise _enosys()

    def flock(self, path: str, fh: int, op: int) -> None:
        """BSD locks (``flock(2)``: ``LOCK_SH``/``LOCK_EX``/``LOCK_UN`` | ``LOCK_NB``)."""
        raise _enosys()

    def ioctl(self, path: str, cmd: int, arg: int, fh: int, flags: int,
              data: Optional[bytes], out_size: int) -> Union[int, bytes, None]:
        """A restricted ioctl: ``cmd`` encodes direction and size (``_IOR``/``_IOW``/``_IOWR``).
        ``data`` holds the caller's input bytes for ``_IOW``/``_IOWR`` (else ``None``). Return
        bytes (at most ``out_size``) for the caller's buffer, or an int result, or ``None`` (0).
        Raise ``ENOTTY`` for commands you do not know."""
        raise _enosys()

    def poll(self, path: str, fh: int, handle: Optional[PollHandle] = None) -> int:
        """Readiness of an open file for ``poll``/``select``: return a mask of ``select.POLLIN``
        etc. When nothing is ready and the caller will sleep, ``handle`` is a
        :class:`pyfuse.PollHandle`: keep it and call ``handle.notify()`` when readiness
        changes (the kernel then asks again); else it is None. A method that takes only
        ``(path, fh)`` is called that way (without notification, callers re-poll on their own
        timeout)."""
        raise _enosys()

    # -- extended attributes ----------------------------------------------------------------
    def setxattr(self, path: str, name: str, value: bytes, flags: int) -> None:
        """Set extended attribute ``name``; ``flags`` may be ``os.XATTR_CREATE`` (``EEXIST`` if
        it exists) or ``os.XATTR_REPLACE`` (``ENODATA`` if it does not).

        Do not store every name blindly: ``system.posix_acl_access`` and
        ``system.posix_acl_default`` are POSIX ACLs, which ``cp -a``, ``rsync -A`` and
        ``setfacl`` write. Stored but not applied, they change nothing while the tools believe
        the permissions were set (and ``ls -l`` then shows a ``+``). Either raise
        ``FuseError(errno.EOPNOTSUPP)`` for ``system.*`` names (the tools then fall back to
        the mode bits), or mount with ``Config(posix_acl=True)``, where the kernel applies
        them (and keeps the mode bits in step) and only asks you to store them."""
        raise _enosys()

    def getxattr(self, path: str, name: str) -> bytes:
        """The value of extended attribute ``name``; raise ``ENODATA`` if there is none. pyfuse
        answers the kernel's size probes and ``ERANGE`` itself."""
        raise _enosys()

    def listxattr(self, path: str) -> Iterable[str]:
        """The names of the extended attributes of ``path``."""
        raise _enosys()

    def removexattr(self, path: str, name: str) -> None:
        """Remove extended attribute ``name`` (``ENODATA`` if there is none)."""
        raise _enosys()

    # -- directories ------------------------------------------------------------------------
    def opendir(self, path: str) -> Union[int, FileInfo, None]:
        """Open a directory for listing; return a handle (passed as ``fh``), ``None``, or a
        :class:`FileInfo` whose ``keep_cache`` and ``cache_readdir`` let the kernel keep the
        listing it reads until :meth:`Session.invalidate_path` of the directory or a change
        through the mount (docs/caching.md)."""
        raise _enosys()

    def readdir(self, path: str, offset: int, fh: int, plus: bool
                ) -> Iterable[Union[str, DirEntry, tuple[Any, ...]]]:
        """The entries of directory ``path``: names (``str``), :class:`DirEntry` objects, or
        plain ``(name, attr)`` / ``(name, attr, offset)`` tuples (the same fields as DirEntry,
        about ten times cheaper to build; ``(name, attr, offset, ino)`` gives the entry the
        inode number ``ino`` in place of ``attr.ino``, so one ``attr`` can serve many entries),
        from any iterable (a generator is natural). A list or
        tuple is sliced rather than iterated, so a listing built once and returned again is
        cheapest to serve; pyfuse may read it across several requests, so do not change it in
        place while it may still be listed (build a new one instead). Include ``"."`` and
        ``".."`` if you want them listed (as ``ls -a`` and POSIX expect).

        Two modes (see docs/readdir.md). Either every entry has offset 0 and the listing starts
        from the beginning on each call (``offset`` is then always 0: pyfuse numbers the entries,
        streams them in kernel-sized batches, and resumes or restarts by itself); or every entry
        carries a non-zero offset and a later call with that ``offset`` must continue after that
        entry. ``plus`` is True when the kernel wants attributes (readdirplus): entries with an
        ``attr`` then spare it a lookup per entry. Iteration stops when the kernel buffer is full;
        a generator is closed (its ``finally:`` runs) when the listing is done or abandoned."""
        raise _enosys()

    def releasedir(self, path: str, fh: int) -> None:
        """A directory opened with ``opendir`` is closed."""
        raise _enosys()

    def fsyncdir(self, path: str, datasync: bool, fh: int) -> None:
        """Flush directory contents to stable storage."""
        raise _enosys()


def implemented(ops: Any) -> set[str]:
    """The names of the Operations methods that ``ops``'s class overrides."""
    cls = type(ops)
    return {name for name, base in vars(Operations).items()
            if callable(base) and not name.startswith("_") and getattr(cls, name, base) is not base}
