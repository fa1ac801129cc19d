"""A complete read-write filesystem held in memory, meant to behave like tmpfs.

    python -m pyfuse.examples.memory /mnt/x

Files, directories, symbolic links, hard links, device nodes and FIFOs; rename with
RENAME_NOREPLACE and RENAME_EXCHANGE; chmod/chown/utimens with nanoseconds; truncate,
fallocate, copy_file_range, SEEK_DATA/SEEK_HOLE; extended attributes; statfs. Permission checks
are left to the kernel (the example mounts with ``default_permissions``), and unlinked files stay
readable and writable through open handles (``Config(hard_remove=True)``: handlers then get
``path=None``). Times change as on tmpfs (tests/conformance compares which step set each one),
except access times, which reads do not update (FUSE is not told of reads served from the page
cache; compare tmpfs mounted ``noatime``). Differences from tmpfs that come from libfuse's
path-based API: ``fstat`` of an unlinked open file fails with ``ESTALE``, since the kernel asks
for it by name, and so does a write by an unprivileged user to such a file when it is setuid
(the kernel first clears the bit by name); ``chown(path, -1, -1)`` leaves ctime alone (libfuse
calls no handler for it); and an unprivileged ``rename`` from one hard link of a file to another
is checked by the kernel (``EPERM`` in a sticky directory) where tmpfs does nothing and succeeds,
as the kernel sees a separate inode for every name; an unprivileged truncate of a setuid file to
its own size stamps ctime (libfuse delivers the clearing of the bit as a chmod), where tmpfs
does not.
And files are not sparse (see :mod:`pyfuse.examples._memstore`, the tree this example and
:mod:`pyfuse.examples.memory_ll` share: every change is made there, once for both). A read
returns a view of the file's data, which pyfuse copies once into the reply.
"""
from __future__ import annotations

import errno
import stat
from typing import Iterator, Optional, Sequence, Union

import pyfuse
from pyfuse import Attr

from ._memstore import MAX_FILE_SIZE, Inode, Store, err

__all__ = ["Memory", "CONFIG", "MAX_FILE_SIZE"]


class Memory(pyfuse.Operations):
    """The in-memory filesystem; see the module docstring."""

    def __init__(self, posix_acl: bool = False) -> None:
        #: Mounted with Config(posix_acl=True): the kernel applies the system.posix_acl_*
        #: attributes, so they are stored (see Store.setxattr).
        self.posix_acl = posix_acl
        self.store = Store()
        self._mutex = self.store.mutex
        self.root = self.store.root

    # -- helpers ---------------------------------------------------------------------------
    def _lookup(self, path: str) -> Inode:
        node = self.root
        for part in path.split("/"):
            if not part:
                continue
            if not node.is_dir:
                raise err(errno.ENOTDIR)
            try:
                node = node.children[part]
            except KeyError:
                raise err(errno.ENOENT) from None
        return node

    def _node(self, path: Optional[str], fh: Optional[int]) -> Inode:
        if fh is not None and fh in self.store.files:
            return self.store.files[fh]
        if path is None:
            raise err(errno.EBADF)
        return self._lookup(path)

    def _parent(self, path: str) -> tuple[Inode, str]:
        head, _, name = path.rpartition("/")
        parent = self._lookup(head or "/")
        if not parent.is_dir:
            raise err(errno.ENOTDIR)
        return parent, name

    def _forget(self, node: Optional[Inode]) -> None:
        """Drop an inode without names or open handles from the table (libfuse's path API
        gives it no other reference: with hard_remove its last handle is the last use)."""
        if node is not None and node.attr.nlink == 0 and node.opened == 0:
            self.store.inodes.pop(node.attr.ino, None)

    # -- attributes and names ----------------------------------------------------------------
    def getattr(self, path: Optional[str], fh: Optional[int]) -> Attr:
        with self._mutex:
            return self._node(path, fh).attr.copy()

    def readlink(self, path: str) -> bytes:
        with self._mutex:
            node = self._lookup(path)
            if not stat.S_ISLNK(node.attr.mode):
                raise err(errno.EINVAL)
            return node.target

    def mknod(self, path: str, mode: int, rdev: int) -> None:
        with self._mutex:
            self.store.add(*self._parent(path), mode, rdev)

    def mkdir(self, path: str, mode: int) -> None:
        with self._mutex:
            self.store.add(*self._parent(path), stat.S_IFDIR | (mode & 0o7777))

    def symlink(self, target: str, path: str) -> None:
        with self._mutex:
            self.store.symlink(*self._parent(path), target)

    def link(self, old: str, new: str) -> None:
        with self._mutex:
            node = self._lookup(old)
            if node.is_dir:
                raise err(errno.EPERM)
            self.store.link(node, *self._parent(new))

    def unlink(self, path: str) -> None:
        with self._mutex:
            self._forget(self.store.remove(*self._parent(path), want_dir=False))

    def rmdir(self, path: str) -> None:
        with self._mutex:
            self._forget(self.store.remove(*self._parent(path), want_dir=True))

    def rename(self, old: str, new: str, flags: int) -> None:
        with self._mutex:
            sp, sname = self._parent(old)
            dp, dname = self._parent(new)
            self._forget(self.store.rename(sp, sname, dp, dname, flags))

    def chmod(self, path: Optional[str], mode: int, fh: Optional[int]) -> None:
        with self._mutex:
            self.store.chmod(self._node(path, fh), mode)

    def chown(self, path: Optional[str], uid: int, gid: int, fh: Optional[int]) -> None:
        with self._mutex:
            self.store.chown(self._node(path, fh), uid, gid)

    def truncate(self, path: Optional[str], size: int, fh: Optional[int]) -> None:
        with self._mutex:
            self.store.truncate(self._node(path, fh), size, fh is not None)

    def utimens(self, path: Optional[str], atime_ns: Optional[int], mtime_ns: Optional[int],
                fh: Optional[int]) -> None:
        with self._mutex:
            self.store.utimens(self._node(path, fh), atime_ns, mtime_ns)

    # -- files -------------------------------------------------------------------------------
    def open(self, path: str, flags: int) -> int:
        with self._mutex:
            return self.store.open(self._lookup(path), flags)

    def create(self, path: str, mode: int, flags: int) -> int:
        with self._mutex:
            node = self.store.add(*self._parent(path), stat.S_IFREG | (mode & 0o7777))
            return self.store.open(node, 0)

    def read(self, path: Optional[str], size: int, offset: int, fh: int) -> memoryview:
        with self._mutex:
            # a view, not a copy: pyfuse copies it once, into the reply
            return memoryview(self.store.files[fh].data)[offset:offset + size]

    def write(self, path: Optional[str], data: memoryview, offset: int, fh: int) -> int:
        with self._mutex:
            return self.store.write(self.store.files[fh], data, offset)

    def release(self, path: Optional[str], fh: int) -> None:
        with self._mutex:
            self._forget(self.store.release(fh))

    def flush(self, path: Optional[str], fh: int) -> None:
        pass

    def fsync(self, path: Optional[str], datasync: bool, fh: int) -> None:
        pass

    def fallocate(self, path: Optional[str], mode: int, offset: int, length: int,
                  fh: int) -> None:
        with self._mutex:
            self.store.fallocate(self.store.files[fh], mode, offset, length)

    def copy_file_range(self, path_in: Optional[str], fh_in: int, offset_in: int,
                        path_out: Optional[str], fh_out: int, offset_out: int, size: int,
                        flags: int) -> int:
        with self._mutex:
            chunk = bytes(self.store.files[fh_in].data[offset_in:offset_in + size])
        return self.write(path_out, memoryview(chunk), offset_out, fh_out) if chunk else 0

    def lseek(self, path: Optional[str], offset: int, whence: int, fh: int) -> int:
        with self._mutex:
            return self.store.lseek(self.store.files[fh], offset, whence)

    def statfs(self, path: str) -> pyfuse.StatVFS:
        with self._mutex:
            return self.store.statfs()

    # -- extended attributes -----------------------------------------------------------------
    def setxattr(self, path: str, name: str, value: bytes, flags: int) -> None:
        with self._mutex:
            self.store.setxattr(self._lookup(path), name, value, flags, self.posix_acl)

    def getxattr(self, path: str, name: str) -> bytes:
        with self._mutex:
            return self.store.getxattr(self._lookup(path), name)

    def listxattr(self, path: str) -> list[str]:
        with self._mutex:
            return list(self._lookup(path).xattrs)

    def removexattr(self, path: str, name: str) -> None:
        with self._mutex:
            self.store.removexattr(self._lookup(path), name)

    # -- directories -------------------------------------------------------------------------
    def readdir(self, path: str, offset: int, fh: int, plus: bool
                ) -> Iterator[Union[str, tuple[str, Attr]]]:
        with self._mutex:
            node = self._lookup(path)
            if not node.is_dir:
                raise err(errno.ENOTDIR)
            entries = list(node.children.items())
        yield "."
        yield ".."
        for name, child in entries:
            yield name, child.attr


#: Inode numbers are the filesystem's own (hard links share one); unlinked open files stay usable;
#: attributes are not cached, because libfuse's path-based API gives each name of a hard-linked
#: file its own kernel inode, and a size cached under one name would go stale after a write
#: through another.
CONFIG = pyfuse.Config(hard_remove=True, use_ino=True, attr_timeout=0.0)


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ._cli import parse, serve

    args, kwargs = parse("Mount an empty in-memory read-write filesystem.", argv)
    kwargs.setdefault("default_permissions", True)
    acl = str(kwargs["options"].get("posix_acl", "")).lower() in ("true", "1", "yes", "on")
    return serve(Memory(posix_acl=acl), args.mountpoint, config=CONFIG, **kwargs)


if __name__ == "__main__":
    raise SystemExit(main())
