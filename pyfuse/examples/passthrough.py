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

A limit of the path API: libfuse rebuilds each request's path from the mount's root, so a
path that a client names relative to a directory deep in the mount (``cd deep; mkdir
<4,000 bytes>``) reaches this filesystem as a path longer than PATH_MAX (4,096 bytes), and the
call below fails with ENAMETOOLONG where ext4 succeeds (pjdfstest run from a subdirectory of
the mount: its PATH_MAX cases). From the mount's root every path within PATH_MAX works. A
filesystem that must serve any depth is written on the inode API (``pyfuse.lowlevel``), whose
requests carry a parent inode and one name.
"""
from __future__ import annotations

import errno
import fcntl
import os
import stat
from typing import Iterator, Optional, Sequence, Union

import pyfuse
from pyfuse import Attr


class Passthrough(pyfuse.Operations):
    """Forward everything to ``source``.

    Run it with a umask of 0 (``main`` sets it): the modes it receives already carry the
    caller's umask. As root, new files are given to the caller (``pyfuse.context()``), so
    mount with ``allow_other`` and ``default_permissions`` for other users: the kernel then
    checks their permissions against the mirrored modes and owners."""

    def __init__(self, source: str) -> None:
        self.source = os.path.realpath(source)
        # Every path is resolved relative to this descriptor, never as SOURCE + path: a path
        # near PATH_MAX in the mount stays within PATH_MAX below it.
        self.fd = os.open(self.source, os.O_RDONLY | os.O_DIRECTORY)

    def _p(self, path: str) -> str:
        """``path`` relative to the source directory (``self.fd``)."""
        return path[1:] if path != "/" else "."

    def _abs(self, path: str) -> str:
        """For the calls that take no directory descriptor (xattrs): through /proc."""
        return f"/proc/self/fd/{self.fd}/{self._p(path)}"

    # -- attributes and names ----------------------------------------------------------------
    def getattr(self, path: str, fh: Optional[int]) -> os.stat_result:
        if fh is not None:
            return os.fstat(fh)
        return os.stat(self._p(path), dir_fd=self.fd, follow_symlinks=False)

    def access(self, path: str, mode: int) -> None:
        if not os.access(self._p(path), mode, dir_fd=self.fd):
            raise pyfuse.FuseError(errno.EACCES)

    def readlink(self, path: str) -> str:
        return os.readlink(self._p(path), dir_fd=self.fd)

    def _own(self, real: str, fd: Optional[int] = None) -> bool:
        """A new file belongs to the process that made it, not to the daemon: as root, hand
        it to the caller (its group stays the directory's under a set-group-ID directory).
        True if the file's group is now the caller's own."""
        if os.geteuid() != 0:
            return False
        ctx = pyfuse.context()
        parent = os.stat(os.path.dirname(real) or ".", dir_fd=self.fd)
        gid = -1 if parent.st_mode & stat.S_ISGID else ctx.gid
        if fd is not None:
            os.fchown(fd, ctx.uid, gid)
        else:
            os.chown(real, ctx.uid, gid, dir_fd=self.fd, follow_symlinks=False)
        return gid != -1

    def mknod(self, path: str, mode: int, rdev: int) -> None:
        os.mknod(self._p(path), mode, rdev, dir_fd=self.fd)
        self._own(self._p(path))

    def mkdir(self, path: str, mode: int) -> None:
        os.mkdir(self._p(path), mode, dir_fd=self.fd)
        self._own(self._p(path))

    def unlink(self, path: str) -> None:
        os.unlink(self._p(path), dir_fd=self.fd)

    def rmdir(self, path: str) -> None:
        os.rmdir(self._p(path), dir_fd=self.fd)

    def symlink(self, target: str, path: str) -> None:
        os.symlink(target, self._p(path), dir_fd=self.fd)
        self._own(self._p(path))

    def rename(self, old: str, new: str, flags: int) -> None:
        if flags:
            _renameat2(self.fd, self._p(old), self._p(new), flags)
        else:
            os.rename(self._p(old), self._p(new), src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def link(self, old: str, new: str) -> None:
        os.link(self._p(old), self._p(new), src_dir_fd=self.fd, dst_dir_fd=self.fd,
                follow_symlinks=False)

    def chmod(self, path: str, mode: int, fh: Optional[int]) -> None:
        if fh is not None:
            os.fchmod(fh, mode)
        else:
            os.chmod(self._p(path), mode, dir_fd=self.fd)

    def chown(self, path: str, uid: int, gid: int, fh: Optional[int]) -> None:
        if fh is not None:
            os.fchown(fh, uid, gid)
        else:
            os.chown(self._p(path), uid, gid, dir_fd=self.fd, follow_symlinks=False)

    def truncate(self, path: str, size: int, fh: Optional[int]) -> None:
        if fh is not None:
            os.ftruncate(fh, size)
        else:
            # truncate(2), not ftruncate(2): a same-size truncate(2) leaves the times alone on
            # tmpfs, ftruncate stamps them. Through an O_PATH descriptor: a short path always.
            fd = os.open(self._p(path), os.O_PATH, dir_fd=self.fd)
            try:
                os.truncate(f"/proc/self/fd/{fd}", size)
            finally:
                os.close(fd)

    def utimens(self, path: str, atime_ns: Optional[int], mtime_ns: Optional[int],
                fh: Optional[int]) -> None:
        if atime_ns is None or mtime_ns is None:  # one of them is UTIME_OMIT: keep it
            st = os.fstat(fh) if fh is not None else self.getattr(path, None)
            atime_ns = st.st_atime_ns if atime_ns is None else atime_ns
            mtime_ns = st.st_mtime_ns if mtime_ns is None else mtime_ns
        if fh is not None:
            os.utime(fh, ns=(atime_ns, mtime_ns))
        else:
            os.utime(self._p(path), ns=(atime_ns, mtime_ns), dir_fd=self.fd,
                     follow_symlinks=False)

    # -- files -------------------------------------------------------------------------------
    def open(self, path: str, flags: int) -> pyfuse.FileInfo:
        fd = os.open(self._p(path), flags & ~os.O_DIRECT, dir_fd=self.fd)
        if flags & os.O_TRUNC:
            self._kill_priv(fd)
        return self._opened(fd, flags)

    @staticmethod
    def _kill_priv(fd: int) -> None:
        """A truncation by an unprivileged caller clears set-user-ID (and set-group-ID with
        group execute), as the kernel does for it; the daemon truncated as root, which keeps
        them. (Truncation through setattr gets this from the kernel as a chmod.)"""
        if os.geteuid() != 0 or pyfuse.context().uid == 0:
            return
        mode = os.fstat(fd).st_mode
        kill = stat.S_ISUID | (stat.S_ISGID if mode & stat.S_IXGRP else 0)
        if mode & kill:
            os.fchmod(fd, stat.S_IMODE(mode) & ~kill)

    def create(self, path: str, mode: int, flags: int) -> pyfuse.FileInfo:
        fd = os.open(self._p(path), (flags | os.O_CREAT) & ~os.O_DIRECT, mode, dir_fd=self.fd)
        try:
            own_group = self._own(self._p(path), fd)
            # The chown cleared set-user-ID and set-group-ID: give back what the caller may
            # have (set-group-ID only for a group it is in, as the kernel does on tmpfs).
            keep = mode & stat.S_ISUID | (mode & stat.S_ISGID if own_group else 0)
            if keep:
                os.fchmod(fd, mode & 0o777 | keep)
        except BaseException:
            os.close(fd)
            raise
        return self._opened(fd, flags)

    @staticmethod
    def _opened(fd: int, flags: int) -> pyfuse.FileInfo:
        # fd_backed: reads and writes go straight to the real file, in C, never through Python.
        # O_DIRECT: the requests' buffers are not aligned for the real file's O_DIRECT, so the
        # real file is opened without it and the kernel's cache of this mount is bypassed.
        return pyfuse.FileInfo(fd, fd_backed=True, direct_io=bool(flags & os.O_DIRECT))

    def statfs(self, path: str) -> os.statvfs_result:
        return os.fstatvfs(self.fd)

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
        os.setxattr(self._abs(path), name, value, flags, follow_symlinks=False)

    def getxattr(self, path: str, name: str) -> bytes:
        return os.getxattr(self._abs(path), name, follow_symlinks=False)

    def listxattr(self, path: str) -> list[str]:
        return os.listxattr(self._abs(path), follow_symlinks=False)

    def removexattr(self, path: str, name: str) -> None:
        os.removexattr(self._abs(path), name, follow_symlinks=False)

    # -- directories -------------------------------------------------------------------------
    def opendir(self, path: str) -> int:
        return os.open(self._p(path), os.O_RDONLY | os.O_DIRECTORY, dir_fd=self.fd)

    def releasedir(self, path: Optional[str], fh: int) -> None:
        os.close(fh)

    def fsyncdir(self, path: Optional[str], datasync: bool, fh: int) -> None:
        os.fsync(fh)

    def readdir(self, path: Optional[str], offset: int, fh: int, plus: bool
                ) -> Iterator[Union[str, tuple[str, Attr]]]:
        yield "."
        yield ".."
        with os.scandir(fh) as it:  # a duplicate of the directory's fd, rewound when done
            for e in it:
                try:
                    yield e.name, Attr.from_stat(e.stat(follow_symlinks=False))
                except FileNotFoundError:
                    continue  # removed while listing


def _renameat2(dir_fd: int, old: str, new: str, flags: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(dir_fd, os.fsencode(old), dir_fd, os.fsencode(new), flags) != 0:
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
    # The kernel has applied the caller's umask to every mode it sends: the daemon's own must
    # not apply again (mkdir, mknod and open(O_CREAT) below would).
    os.umask(0)
    return serve(Passthrough(args.source), args.mountpoint, config=CONFIG, **kwargs)


if __name__ == "__main__":
    raise SystemExit(main())
