"""The in-memory filesystem of :mod:`pyfuse.examples.memory`, on the inode API.

    python -m pyfuse.examples.memory_ll /mnt/x

What the inode API changes: the filesystem owns the inode numbers, so a hard link is one
inode under two names (one kernel inode too), and a file stays an inode after its last name is
removed for as long as the kernel holds lookups of it or it is open: ``fstat`` of an open,
unlinked file answers ``nlink`` 0 (the path API answers ``ESTALE``). The inode is freed when
it has no names, no open handle, and the kernel has forgotten it (forget brought pyfuse's
lookup count, :func:`pyfuse.lowlevel.lookups`, to 0).

Files, directories, symbolic links, hard links, device nodes and FIFOs; rename with
RENAME_NOREPLACE and RENAME_EXCHANGE; setattr with nanosecond times; fallocate,
copy_file_range, SEEK_DATA/SEEK_HOLE; extended attributes; statfs. Permission checks are the
kernel's (``default_permissions``). Access times are not updated by reads, as in the path
example. Every change is made by the tree both memory examples share
(:mod:`pyfuse.examples._memstore`); this module finds the nodes by inode number.

Symbolic links' targets are cached by the kernel (``cache_symlinks``, docs/caching.md). With
``-o no_open`` the kernel also sends no OPENDIR (there is no ``opendir``) and keeps each
listing until the directory changes (every change comes through the mount, and the kernel
drops the listing itself).
"""
from __future__ import annotations

import errno
import stat
from typing import Iterator, Optional, Sequence

import pyfuse
import pyfuse.lowlevel as ll
from pyfuse import Attr

from ._memstore import Inode, Store, err

__all__ = ["MemoryLL"]


class MemoryLL(ll.Operations):
    """The in-memory filesystem on the inode API; see the module docstring."""

    def __init__(self) -> None:
        self.store = Store()
        self._mutex = self.store.mutex
        self.inodes = self.store.inodes  # by number: ROOT_INO is the root
        assert self.store.root.attr.ino == ll.ROOT_INO

    # -- helpers ---------------------------------------------------------------------------
    def _node(self, ino: int) -> Inode:
        try:
            return self.inodes[ino]
        except KeyError:
            raise err(errno.ESTALE) from None

    def _dir(self, ino: int) -> Inode:
        node = self._node(ino)
        if not node.is_dir:
            raise err(errno.ENOTDIR)
        return node

    def _child(self, parent: int, name: str) -> Inode:
        try:
            return self._dir(parent).children[name]
        except KeyError:
            raise err(errno.ENOENT) from None

    def _maybe_free(self, node: Optional[Inode]) -> None:
        """Free an inode without names, open handles or lookups the kernel holds."""
        if node is not None and node.attr.nlink == 0 and node.opened == 0 \
                and ll.lookups(node.attr.ino) == 0:
            self.inodes.pop(node.attr.ino, None)

    # -- names and inodes --------------------------------------------------------------------
    def lookup(self, parent: int, name: str) -> Attr:
        with self._mutex:
            return self._child(parent, name).attr.copy()

    def forget(self, ino: int, nlookup: int) -> None:
        with self._mutex:
            self._maybe_free(self.inodes.get(ino))

    def getattr(self, ino: int, fh: Optional[int]) -> Attr:
        with self._mutex:
            return self._node(ino).attr.copy()

    def setattr(self, ino: int, attr: Attr, to_set: int, fh: Optional[int]) -> Attr:
        with self._mutex:
            node = self._node(ino)
            if to_set & ll.SET_MODE:
                self.store.chmod(node, attr.mode)
            if to_set & (ll.SET_UID | ll.SET_GID):
                self.store.chown(node, attr.uid if to_set & ll.SET_UID else -1,
                                 attr.gid if to_set & ll.SET_GID else -1)
            if to_set & ll.SET_SIZE:
                self.store.truncate(node, attr.size, fh is not None)
            if to_set & (ll.SET_ATIME | ll.SET_MTIME):
                self.store.utimens(node, attr.atime_ns if to_set & ll.SET_ATIME else None,
                                   attr.mtime_ns if to_set & ll.SET_MTIME else None)
            if to_set & ll.SET_CTIME:
                node.attr.ctime_ns = attr.ctime_ns
            return node.attr.copy()

    def readlink(self, ino: int) -> bytes:
        with self._mutex:
            node = self._node(ino)
            if not stat.S_ISLNK(node.attr.mode):
                raise err(errno.EINVAL)
            return node.target

    def mknod(self, parent: int, name: str, mode: int, rdev: int) -> Attr:
        with self._mutex:
            return self.store.add(self._dir(parent), name, mode, rdev).attr.copy()

    def mkdir(self, parent: int, name: str, mode: int) -> Attr:
        with self._mutex:
            node = self.store.add(self._dir(parent), name, stat.S_IFDIR | (mode & 0o7777))
            return node.attr.copy()

    def symlink(self, target: str, parent: int, name: str) -> Attr:
        with self._mutex:
            return self.store.symlink(self._dir(parent), name, target).attr.copy()

    def link(self, ino: int, newparent: int, newname: str) -> Attr:
        with self._mutex:
            node = self._node(ino)
            self.store.link(node, self._node(newparent), newname)
            return node.attr.copy()

    def unlink(self, parent: int, name: str) -> None:
        with self._mutex:
            self._maybe_free(self.store.remove(self._dir(parent), name, want_dir=False))

    def rmdir(self, parent: int, name: str) -> None:
        with self._mutex:
            self._maybe_free(self.store.remove(self._dir(parent), name, want_dir=True))

    def rename(self, parent: int, name: str, newparent: int, newname: str, flags: int) -> None:
        with self._mutex:
            self._maybe_free(self.store.rename(self._dir(parent), name, self._node(newparent),
                                               newname, flags))

    # -- files -------------------------------------------------------------------------------
    def open(self, ino: int, flags: int) -> int:
        with self._mutex:
            return self.store.open(self._node(ino), flags)

    def create(self, parent: int, name: str, mode: int, flags: int) -> tuple[Attr, int]:
        with self._mutex:
            node = self.store.add(self._dir(parent), name, stat.S_IFREG | (mode & 0o7777))
            return node.attr.copy(), self.store.open(node, 0)

    def read(self, ino: int, size: int, offset: int, fh: int) -> bytes:
        with self._mutex:
            return bytes(self.store.files[fh].data[offset:offset + size])

    def write(self, ino: int, data: memoryview, offset: int, fh: int) -> int:
        with self._mutex:
            return self.store.write(self.store.files[fh], data, offset)

    def release(self, ino: int, fh: int) -> None:
        with self._mutex:
            self._maybe_free(self.store.release(fh))

    def flush(self, ino: int, fh: int) -> None:
        pass

    def fsync(self, ino: int, datasync: bool, fh: int) -> None:
        pass

    def fallocate(self, ino: int, mode: int, offset: int, length: int, fh: int) -> None:
        with self._mutex:
            self.store.fallocate(self.store.files[fh], mode, offset, length)

    def copy_file_range(self, ino_in: int, offset_in: int, fh_in: int, ino_out: int,
                        offset_out: int, fh_out: int, size: int, flags: int) -> int:
        with self._mutex:
            chunk = bytes(self.store.files[fh_in].data[offset_in:offset_in + size])
        return self.write(ino_out, memoryview(chunk), offset_out, fh_out) if chunk else 0

    def lseek(self, ino: int, offset: int, whence: int, fh: int) -> int:
        with self._mutex:
            return self.store.lseek(self.store.files[fh], offset, whence)

    def statfs(self, ino: int) -> pyfuse.StatVFS:
        with self._mutex:
            return self.store.statfs()

    # -- extended attributes -----------------------------------------------------------------
    def setxattr(self, ino: int, name: str, value: bytes, flags: int) -> None:
        with self._mutex:  # ACLs are not applied by this example: refused, not stored
            self.store.setxattr(self._node(ino), name, value, flags, posix_acl=False)

    def getxattr(self, ino: int, name: str) -> bytes:
        with self._mutex:
            return self.store.getxattr(self._node(ino), name)

    def listxattr(self, ino: int) -> list[str]:
        with self._mutex:
            return list(self._node(ino).xattrs)

    def removexattr(self, ino: int, name: str) -> None:
        with self._mutex:
            self.store.removexattr(self._node(ino), name)

    # -- directories -------------------------------------------------------------------------
    def readdir(self, ino: int, offset: int, fh: int, plus: bool) -> Iterator[tuple[str, Attr]]:
        with self._mutex:
            node = self._dir(ino)
            assert node.parent is not None
            # copies: the entries are packed in batches, after this lock is released
            entries = [(".", node.attr.copy()), ("..", node.parent.attr.copy())]
            entries += [(name, child.attr.copy()) for name, child in node.children.items()]
        return iter(entries)


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ._cli import parse, serve

    args, kwargs = parse("Mount an empty in-memory read-write filesystem (inode API).", argv)
    kwargs.setdefault("default_permissions", True)
    kwargs["options"].setdefault("cache_symlinks", True)
    return serve(MemoryLL(), args.mountpoint, session_type=ll.Session, **kwargs)


if __name__ == "__main__":
    raise SystemExit(main())
