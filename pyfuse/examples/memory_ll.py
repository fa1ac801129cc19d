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
example. One lock serialises all operations.
"""
from __future__ import annotations

import errno
import os
import stat
import threading
import time
from typing import Callable, Iterator, Optional, Sequence

import pyfuse
import pyfuse.lowlevel as ll
from pyfuse import Attr, DirEntry, FuseError

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
FALLOC_FL_KEEP_SIZE = 1
FALLOC_FL_PUNCH_HOLE = 2
MAX_FILE_SIZE = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
BLOCK = 4096


class Inode:
    """A file, directory, symlink or special node: attributes plus what the type needs."""

    __slots__ = ("attr", "data", "children", "target", "xattrs", "parent", "opened")

    def __init__(self, ino: int, mode: int, uid: int, gid: int, rdev: int = 0) -> None:
        now = time.time_ns()
        self.attr = Attr(mode=mode, ino=ino, nlink=1, uid=uid, gid=gid, rdev=rdev,
                         atime_ns=now, mtime_ns=now, ctime_ns=now)
        self.data = bytearray()
        self.children: dict[str, Inode] = {}
        self.target = b""
        self.xattrs: dict[str, bytes] = {}
        self.parent: Optional[Inode] = None  # directories only
        self.opened = 0  # open handles

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.attr.mode)

    def touch(self, *, m: bool = True, c: bool = True) -> None:
        now = time.time_ns()
        if m:
            self.attr.mtime_ns = now
        if c:
            self.attr.ctime_ns = now


def _err(code: int) -> FuseError:
    return FuseError(code)


def _kill_privs(node: Inode) -> None:
    """Like the kernel for a write or truncate by a caller without CAP_FSETID."""
    if pyfuse.context().uid == 0:
        return
    node.attr.mode &= ~(stat.S_ISUID | (stat.S_ISGID if node.attr.mode & stat.S_IXGRP else 0))


def _change(node: Inode, change: Callable[[bytearray], None]) -> None:
    """Apply ``change`` to the data (a new buffer if a read's view still holds the old)."""
    try:
        change(node.data)
    except BufferError:
        node.data = bytearray(node.data)
        change(node.data)
    node.attr.size = n = len(node.data)
    node.attr.blocks = (n + 511) // 512


class MemoryLL(ll.Operations):
    """The in-memory filesystem on the inode API; see the module docstring."""

    def __init__(self) -> None:
        self._mutex = threading.RLock()
        self.next_ino = ll.ROOT_INO
        self.inodes: dict[int, Inode] = {}
        self.root = self._new(stat.S_IFDIR | 0o755, os.getuid(), os.getgid())
        self.root.attr.nlink = 2
        self.root.parent = self.root
        self.files: dict[int, Inode] = {}  # open handles
        self.next_fh = 1

    # -- helpers ---------------------------------------------------------------------------
    def _new(self, mode: int, uid: int, gid: int, rdev: int = 0) -> Inode:
        node = Inode(self.next_ino, mode, uid, gid, rdev)
        self.inodes[self.next_ino] = node
        self.next_ino += 1
        return node

    def _node(self, ino: int) -> Inode:
        try:
            return self.inodes[ino]
        except KeyError:
            raise _err(errno.ESTALE) from None

    def _dir(self, ino: int) -> Inode:
        node = self._node(ino)
        if not node.is_dir:
            raise _err(errno.ENOTDIR)
        return node

    def _child(self, parent: int, name: str) -> Inode:
        try:
            return self._dir(parent).children[name]
        except KeyError:
            raise _err(errno.ENOENT) from None

    def _add(self, parent_ino: int, name: str, mode: int, rdev: int = 0) -> Inode:
        parent = self._dir(parent_ino)
        if name in parent.children:
            raise _err(errno.EEXIST)
        ctx = pyfuse.context()
        gid = ctx.gid
        if parent.attr.mode & stat.S_ISGID:  # setgid directories pass their group on
            gid = parent.attr.gid
            if stat.S_ISDIR(mode):
                mode |= stat.S_ISGID
        node = self._new(mode, ctx.uid, gid, rdev)
        parent.children[name] = node
        if node.is_dir:
            node.attr.nlink = 2
            node.parent = parent
            parent.attr.nlink += 1
        parent.touch()
        return node

    def _maybe_free(self, node: Inode) -> None:
        """Free an inode without names, open handles or lookups the kernel holds."""
        if node.attr.nlink == 0 and node.opened == 0 and ll.lookups(node.attr.ino) == 0:
            self.inodes.pop(node.attr.ino, None)

    def _open_handle(self, node: Inode) -> int:
        fh = self.next_fh
        self.next_fh += 1
        self.files[fh] = node
        node.opened += 1
        return fh

    # -- names and inodes --------------------------------------------------------------------
    def lookup(self, parent: int, name: str) -> Attr:
        with self._mutex:
            return self._child(parent, name).attr.copy()

    def forget(self, ino: int, nlookup: int) -> None:
        with self._mutex:
            node = self.inodes.get(ino)
            if node is not None:
                self._maybe_free(node)

    def getattr(self, ino: int, fh: Optional[int]) -> Attr:
        with self._mutex:
            return self._node(ino).attr.copy()

    def setattr(self, ino: int, attr: Attr, to_set: int, fh: Optional[int]) -> Attr:
        with self._mutex:
            node = self._node(ino)
            a = node.attr
            if to_set & ll.SET_MODE:
                a.mode = stat.S_IFMT(a.mode) | (attr.mode & 0o7777)
            if to_set & (ll.SET_UID | ll.SET_GID):
                if to_set & ll.SET_UID:
                    a.uid = attr.uid
                if to_set & ll.SET_GID:
                    a.gid = attr.gid
                if not node.is_dir:  # like the kernel: chown clears setuid (and setgid)
                    mode = a.mode & ~stat.S_ISUID
                    a.mode = mode & ~stat.S_ISGID if mode & stat.S_IXGRP else mode
            if to_set & ll.SET_SIZE:
                if node.is_dir:
                    raise _err(errno.EISDIR)
                changed = attr.size != len(node.data)
                self._resize(node, attr.size)
                _kill_privs(node)
                if changed or fh is not None:
                    node.touch()
            if to_set & ll.SET_ATIME:
                a.atime_ns = attr.atime_ns
            if to_set & ll.SET_MTIME:
                a.mtime_ns = attr.mtime_ns
            if to_set & ~ll.SET_SIZE:  # (a size change stamps the times above, as tmpfs)
                node.touch(m=False)
            if to_set & ll.SET_CTIME:
                a.ctime_ns = attr.ctime_ns
            return a.copy()

    def readlink(self, ino: int) -> bytes:
        with self._mutex:
            node = self._node(ino)
            if not stat.S_ISLNK(node.attr.mode):
                raise _err(errno.EINVAL)
            return node.target

    def mknod(self, parent: int, name: str, mode: int, rdev: int) -> Attr:
        with self._mutex:
            return self._add(parent, name, mode, rdev).attr.copy()

    def mkdir(self, parent: int, name: str, mode: int) -> Attr:
        with self._mutex:
            return self._add(parent, name, stat.S_IFDIR | (mode & 0o7777)).attr.copy()

    def symlink(self, target: str, parent: int, name: str) -> Attr:
        with self._mutex:
            node = self._add(parent, name, stat.S_IFLNK | 0o777)
            node.target = os.fsencode(target)
            node.attr.size = len(node.target)
            return node.attr.copy()

    def link(self, ino: int, newparent: int, newname: str) -> Attr:
        with self._mutex:
            node = self._node(ino)
            if node.is_dir:
                raise _err(errno.EPERM)
            parent = self._dir(newparent)
            if newname in parent.children:
                raise _err(errno.EEXIST)
            parent.children[newname] = node
            node.attr.nlink += 1
            node.touch(m=False)
            parent.touch()
            return node.attr.copy()

    def _remove(self, parent_ino: int, name: str, want_dir: bool) -> None:
        parent = self._dir(parent_ino)
        node = parent.children.get(name)
        if node is None:
            raise _err(errno.ENOENT)
        if want_dir:
            if not node.is_dir:
                raise _err(errno.ENOTDIR)
            if node.children:
                raise _err(errno.ENOTEMPTY)
            parent.attr.nlink -= 1
            node.attr.nlink = 0
        else:
            if node.is_dir:
                raise _err(errno.EISDIR)
            node.attr.nlink -= 1
        del parent.children[name]
        node.touch(m=False)
        parent.touch()
        self._maybe_free(node)

    def unlink(self, parent: int, name: str) -> None:
        with self._mutex:
            self._remove(parent, name, want_dir=False)

    def rmdir(self, parent: int, name: str) -> None:
        with self._mutex:
            self._remove(parent, name, want_dir=True)

    def rename(self, parent: int, name: str, newparent: int, newname: str, flags: int) -> None:
        with self._mutex:
            if flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE) or flags == (
                    RENAME_NOREPLACE | RENAME_EXCHANGE):
                raise _err(errno.EINVAL)
            sp, dp = self._dir(parent), self._dir(newparent)
            node = sp.children.get(name)
            if node is None:
                raise _err(errno.ENOENT)
            other = dp.children.get(newname)
            if node.is_dir and self._is_ancestor(node, dp):
                raise _err(errno.EINVAL)  # moving a directory below itself
            if flags & RENAME_EXCHANGE:
                if other is None:
                    raise _err(errno.ENOENT)
                if other.is_dir and self._is_ancestor(other, sp):
                    raise _err(errno.EINVAL)
                sp.children[name], dp.children[newname] = other, node
                for moved, frm, to in ((node, sp, dp), (other, dp, sp)):
                    if moved.is_dir and frm is not to:
                        frm.attr.nlink -= 1
                        to.attr.nlink += 1
                        moved.parent = to
                    moved.touch(m=False)
                sp.touch()
                dp.touch()
                return
            if other is node:
                return  # two names of one inode: POSIX says do nothing
            if other is not None:
                if flags & RENAME_NOREPLACE:
                    raise _err(errno.EEXIST)
                if node.is_dir and not other.is_dir:
                    raise _err(errno.ENOTDIR)
                if not node.is_dir and other.is_dir:
                    raise _err(errno.EISDIR)
                if other.is_dir:
                    if other.children:
                        raise _err(errno.ENOTEMPTY)
                    dp.attr.nlink -= 1
                    other.attr.nlink = 0
                else:
                    other.attr.nlink -= 1
                other.touch(m=False)
            del sp.children[name]
            dp.children[newname] = node
            if node.is_dir and sp is not dp:
                sp.attr.nlink -= 1
                dp.attr.nlink += 1
                node.parent = dp
            node.touch(m=False)
            sp.touch()
            dp.touch()
            if other is not None:
                self._maybe_free(other)

    def _is_ancestor(self, node: Inode, d: Inode) -> bool:
        while True:
            if d is node:
                return True
            if d is self.root:
                return False
            assert d.parent is not None
            d = d.parent

    @staticmethod
    def _resize(node: Inode, size: int) -> None:
        if size > MAX_FILE_SIZE:
            raise _err(errno.EFBIG)

        def resize(buf: bytearray) -> None:
            cur = len(buf)
            if size < cur:
                del buf[size:]
            elif size > cur:
                buf.extend(bytes(size - cur))

        _change(node, resize)

    # -- files -------------------------------------------------------------------------------
    def open(self, ino: int, flags: int) -> int:
        with self._mutex:
            node = self._node(ino)
            if flags & os.O_TRUNC and stat.S_ISREG(node.attr.mode):
                self._resize(node, 0)
                _kill_privs(node)
                node.touch()
            return self._open_handle(node)

    def create(self, parent: int, name: str, mode: int, flags: int) -> tuple[Attr, int]:
        with self._mutex:
            node = self._add(parent, name, stat.S_IFREG | (mode & 0o7777))
            return node.attr.copy(), self._open_handle(node)

    def read(self, ino: int, size: int, offset: int, fh: int) -> bytes:
        with self._mutex:
            return bytes(self.files[fh].data[offset:offset + size])

    def write(self, ino: int, data: memoryview, offset: int, fh: int) -> int:
        n = len(data)
        if offset + n > MAX_FILE_SIZE:
            raise _err(errno.EFBIG)

        def store(buf: bytearray) -> None:
            if offset > len(buf):
                buf.extend(bytes(offset - len(buf)))
            if offset == len(buf):
                buf += data
            else:
                buf[offset:offset + n] = data

        with self._mutex:
            node = self.files[fh]
            _change(node, store)
            _kill_privs(node)
            node.touch()
            return n

    def release(self, ino: int, fh: int) -> None:
        with self._mutex:
            node = self.files.pop(fh, None)
            if node is not None:
                node.opened -= 1
                self._maybe_free(node)

    def flush(self, ino: int, fh: int) -> None:
        pass

    def fsync(self, ino: int, datasync: bool, fh: int) -> None:
        pass

    def fallocate(self, ino: int, mode: int, offset: int, length: int, fh: int) -> None:
        with self._mutex:
            node = self.files[fh]
            end = offset + length
            if mode & FALLOC_FL_PUNCH_HOLE:
                if not mode & FALLOC_FL_KEEP_SIZE:
                    raise _err(errno.EOPNOTSUPP)
                stop = min(end, len(node.data))
                if offset < stop:
                    node.data[offset:stop] = bytes(stop - offset)
            elif mode & ~FALLOC_FL_KEEP_SIZE:
                raise _err(errno.EOPNOTSUPP)
            elif end > len(node.data) and not mode & FALLOC_FL_KEEP_SIZE:
                self._resize(node, end)
            node.touch()

    def copy_file_range(self, ino_in: int, offset_in: int, fh_in: int, ino_out: int,
                        offset_out: int, fh_out: int, size: int, flags: int) -> int:
        with self._mutex:
            chunk = bytes(self.files[fh_in].data[offset_in:offset_in + size])
        return self.write(ino_out, memoryview(chunk), offset_out, fh_out) if chunk else 0

    def lseek(self, ino: int, offset: int, whence: int, fh: int) -> int:
        with self._mutex:
            size = len(self.files[fh].data)
        if offset >= size:
            raise _err(errno.ENXIO)
        return offset if whence == os.SEEK_DATA else size  # no holes are tracked

    def statfs(self, ino: int) -> pyfuse.StatVFS:
        with self._mutex:
            used = sum(len(n.data) for n in self.inodes.values())
            count = len(self.inodes)
        total = 1 << 30
        free = max(total - used, 0) // BLOCK
        return pyfuse.StatVFS(f_bsize=BLOCK, f_frsize=BLOCK, f_blocks=total // BLOCK,
                              f_bfree=free, f_bavail=free, f_files=1 << 20,
                              f_ffree=(1 << 20) - count, f_favail=(1 << 20) - count,
                              f_namemax=255)

    # -- extended attributes -----------------------------------------------------------------
    def setxattr(self, ino: int, name: str, value: bytes, flags: int) -> None:
        if name.startswith("system.posix_acl_"):
            raise _err(errno.EOPNOTSUPP)  # not applied by this example: refused, not stored
        with self._mutex:
            node = self._node(ino)
            if flags & os.XATTR_CREATE and name in node.xattrs:
                raise _err(errno.EEXIST)
            if flags & os.XATTR_REPLACE and name not in node.xattrs:
                raise _err(errno.ENODATA)
            node.xattrs[name] = bytes(value)
            node.touch(m=False)

    def getxattr(self, ino: int, name: str) -> bytes:
        with self._mutex:
            try:
                return self._node(ino).xattrs[name]
            except KeyError:
                raise _err(errno.ENODATA) from None

    def listxattr(self, ino: int) -> list[str]:
        with self._mutex:
            return list(self._node(ino).xattrs)

    def removexattr(self, ino: int, name: str) -> None:
        with self._mutex:
            node = self._node(ino)
            if node.xattrs.pop(name, None) is None:
                raise _err(errno.ENODATA)
            node.touch(m=False)

    # -- directories -------------------------------------------------------------------------
    def readdir(self, ino: int, offset: int, fh: int, plus: bool) -> Iterator[DirEntry]:
        with self._mutex:
            node = self._dir(ino)
            assert node.parent is not None
            # copies: the entries are packed in batches, after this lock is released
            entries = [DirEntry(".", node.attr.copy()), DirEntry("..", node.parent.attr.copy())]
            entries += [DirEntry(name, child.attr.copy()) for name, child in node.children.items()]
        return iter(entries)


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ._cli import parse, serve

    args, kwargs = parse("Mount an empty in-memory read-write filesystem (inode API).", argv)
    kwargs.setdefault("default_permissions", True)
    return serve(MemoryLL(), args.mountpoint, session_type=ll.Session, **kwargs)


if __name__ == "__main__":
    raise SystemExit(main())
