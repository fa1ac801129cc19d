"""Mirror a directory: every operation is forwarded to the real filesystem below SOURCE.

    python -m pyfuse.examples.passthrough SOURCE MOUNTPOINT

Errors from the underlying system calls propagate unchanged: an :class:`OSError` raised by
``os.*`` carries its errno, which pyfuse hands to the caller. File handles are the real file
descriptors. Readdir hands out attributes with the names (one ``os.scandir`` pass), so the kernel
needs no lookup per entry for ``ls -l``. File data never passes through Python: ``open`` returns
the real file's descriptor as an ``fd_backed`` :class:`pyfuse.FileInfo`, so READ and WRITE are
served by the C shim from it (``pread`` into the reply, or ``splice(2)`` where it can, see
``CONFIG``) without a call into Python. (:class:`pyfuse.FdRange` and ``write_fd`` are the
per-request form of the same, for filesystems that decide request by request.)
"""
from __future__ import annotations

import errno
import fcntl
import os
from typing import Iterator, Optional, Sequence, Union

import pyfuse
from pyfuse import Attr, DirEntry


class Passthrough(pyfuse.Operations):
    """Forward everything to ``source``."""

    def __init__(self, source: str) -> None:
        self.source = os.path.realpath(source)

    def _p(self, path: str) -> str:
        return self.source + path if path != "/" else self.source

    # -- attributes and names ----------------------------------------------------------------
    def getattr(self, path: str, fh: Optional[int]) -> os.stat_result:
        if fh is not None:
            return os.fstat(fh)
        return os.lstat(self._p(path))

    def access(self, path: str, mode: int) -> None:
        if not os.access(self._p(path), mode):
            raise pyfuse.FuseError(errno.EACCES)

    def readlink(self, path: str) -> str:
        return os.readlink(self._p(path))

    def mknod(self, path: str, mode: int, rdev: int) -> None:
        os.mknod(self._p(path), mode, rdev)

    def mkdir(self, path: str, mode: int) -> None:
        os.mkdir(self._p(path), mode)

    def unlink(self, path: str) -> None:
        os.unlink(self._p(path))

    def rmdir(self, path: str) -> None:
        os.rmdir(self._p(path))

    def symlink(self, target: str, path: str) -> None:
        os.symlink(target, self._p(path))

    def rename(self, old: str, new: str, flags: int) -> None:
        if flags:
            _renameat2(self._p(old), self._p(new), flags)
        else:
            os.rename(self._p(old), self._p(new))

    def link(self, old: str, new: str) -> None:
        os.link(self._p(old), self._p(new))

    def chmod(self, path: str, mode: int, fh: Optional[int]) -> None:
        if fh is not None:
            os.fchmod(fh, mode)
        else:
            os.chmod(self._p(path), mode)

    def chown(self, path: str, uid: int, gid: int, fh: Optional[int]) -> None:
        if fh is not None:
            os.fchown(fh, uid, gid)
        else:
            os.lchown(self._p(path), uid, gid)

    def truncate(self, path: str, size: int, fh: Optional[int]) -> None:
        if fh is not None:
            os.ftruncate(fh, size)
        else:
            os.truncate(self._p(path), size)

    def utimens(self, path: str, atime_ns: Optional[int], mtime_ns: Optional[int],
                fh: Optional[int]) -> None:
        if atime_ns is None or mtime_ns is None:  # one of them is UTIME_OMIT: keep it
            st = os.fstat(fh) if fh is not None else os.lstat(self._p(path))
            atime_ns = st.st_atime_ns if atime_ns is None else atime_ns
            mtime_ns = st.st_mtime_ns if mtime_ns is None else mtime_ns
        if fh is not None:
            os.utime(fh, ns=(atime_ns, mtime_ns))
        else:
            os.utime(self._p(path), ns=(atime_ns, mtime_ns), follow_symlinks=False)

    # -- files -------------------------------------------------------------------------------
    def open(self, path: str, flags: int) -> pyfuse.FileInfo:
        return self._opened(os.open(self._p(path), flags & ~os.O_DIRECT), flags)

    def create(self, path: str, mode: int, flags: int) -> pyfuse.FileInfo:
        return self._opened(os.open(self._p(path), (flags | os.O_CREAT) & ~os.O_DIRECT, mode),
                            flags)

    @staticmethod
    def _opened(fd: int, flags: int) -> pyfuse.FileInfo:
        # fd_backed: reads and writes go straight to the real file, in C, never through Python.
        # O_DIRECT: the requests' buffers are not aligned for the real file's O_DIRECT, so the
        # real file is opened without it and the kernel's cache of this mount is bypassed.
        return pyfuse.FileInfo(fd, fd_backed=True, direct_io=bool(flags & os.O_DIRECT))

    def statfs(self, path: str) -> os.statvfs_result:
        return os.statvfs(self._p(path))

    def flush(self, path: str, fh: int) -> None:
        os.close(os.dup(fh))  # like passthrough.c: report close() errors of the real file

    def release(self, path: str, fh: int) -> None:
        os.close(fh)

    def fsync(self, path: str, datasync: bool, fh: int) -> None:
        (os.fdatasync if datasync else os.fsync)(fh)

    def fallocate(self, path: str, mode: int, offset: int, length: int, fh: int) -> None:
        if mode:
            raise pyfuse.FuseError(errno.EOPNOTSUPP)
        os.posix_fallocate(fh, offset, length)

    def copy_file_range(self, path_in: str, fh_in: int, offset_in: int, path_out: str,
                        fh_out: int, offset_out: int, size: int, flags: int) -> int:
        return os.copy_file_range(fh_in, fh_out, size, offset_in, offset_out)

    def lseek(self, path: str, offset: int, whence: int, fh: int) -> int:
        return os.lseek(fh, offset, whence)

    def flock(self, path: str, fh: int, op: int) -> None:
        fcntl.flock(fh, op)

    # -- extended attributes -----------------------------------------------------------------
    def setxattr(self, path: str, name: str, value: bytes, flags: int) -> None:
        os.setxattr(self._p(path), name, value, flags, follow_symlinks=False)

    def getxattr(self, path: str, name: str) -> bytes:
        return os.getxattr(self._p(path), name, follow_symlinks=False)

    def listxattr(self, path: str) -> list[str]:
        return os.listxattr(self._p(path), follow_symlinks=False)

    def removexattr(self, path: str, name: str) -> None:
        os.removexattr(self._p(path), name, follow_symlinks=False)

    # -- directories -------------------------------------------------------------------------
    def opendir(self, path: str) -> int:
        return os.open(self._p(path), os.O_RDONLY | os.O_DIRECTORY)

    def releasedir(self, path: Optional[str], fh: int) -> None:
        os.close(fh)

    def fsyncdir(self, path: Optional[str], datasync: bool, fh: int) -> None:
        os.fsync(fh)

    def readdir(self, path: Optional[str], offset: int, fh: int, plus: bool
                ) -> Iterator[Union[str, DirEntry]]:
        yield "."
        yield ".."
        with os.scandir(fh) as it:  # a duplicate of the directory's fd, rewound when done
            for e in it:
                try:
                    yield DirEntry(e.name, Attr.from_stat(e.stat(follow_symlinks=False)))
                except FileNotFoundError:
                    continue  # removed while listing


def _renameat2(old: str, new: str, flags: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd = -100
    if libc.renameat2(at_fdcwd, os.fsencode(old), at_fdcwd, os.fsencode(new), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


#: Like tmpfs (and libfuse's passthrough.c): an unlinked open file is removed at once
#: (hard_remove; handlers then get path=None and use fh), the real inode numbers are shown
#: (use_ino), attributes are not cached (a hard link's nlink changes when another name is
#: unlinked). Operations on open files use only fh, so libfuse need not build their paths
#: (nullpath_ok: path is None there). Data moves through pipes with splice(2), both ways.
CONFIG = pyfuse.Config(hard_remove=True, use_ino=True, attr_timeout=0.0, nullpath_ok=True,
                       splice_read=True, splice_write=True, splice_move=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ._cli import parse, serve

    args, kwargs = parse("Mirror SOURCE at MOUNTPOINT.", argv, source=True)
    return serve(Passthrough(args.source), args.mountpoint, config=CONFIG, **kwargs)


if __name__ == "__main__":
    raise SystemExit(main())
