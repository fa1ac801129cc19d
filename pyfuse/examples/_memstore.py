"""The in-memory tree that the memory examples serve: :mod:`pyfuse.examples.memory` through the
path API, :mod:`pyfuse.examples.memory_ll` through the inode API. Each finds the nodes a
request names (by path, or by inode number) and calls the one implementation of each change
here, so both behave alike, like tmpfs (tests/conformance compares them with it).

File data lives in a ``bytearray`` per file, so sequential appends are amortised O(1); it is
held in RAM up to ``MAX_FILE_SIZE`` (half of the machine's memory, as tmpfs's default size),
and writing beyond it fails with ``EFBIG`` where tmpfs would make a hole. The callers hold
``Store.mutex`` around every call: handlers run on several threads.
"""
from __future__ import annotations

import errno
import os
import stat
import threading
import time
from typing import Callable, Optional

import pyfuse
from pyfuse import Attr, FuseError

__all__ = ["Inode", "Store", "MAX_FILE_SIZE", "BLOCK"]

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
FALLOC_FL_KEEP_SIZE = 1
FALLOC_FL_PUNCH_HOLE = 2
#: File data is held in RAM and not sparse: like tmpfs's default size limit, half of the
#: machine's memory; a write or truncate beyond it fails with EFBIG.
MAX_FILE_SIZE = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
BLOCK = 4096


def err(code: int) -> FuseError:
    return FuseError(code)


def _check_new_name(parent: Inode, name: str) -> None:
    """Raise what tmpfs answers for a new ``name`` in ``parent`` that cannot be made: ENOTDIR,
    ENAMETOOLONG or EEXIST."""
    if not parent.is_dir:
        raise err(errno.ENOTDIR)
    if len(os.fsencode(name)) > 255:
        raise err(errno.ENAMETOOLONG)
    if name in parent.children:
        raise err(errno.EEXIST)


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
        self.opened = 0  # open handles (the inode API frees an unlinked inode once unused)

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.attr.mode)

    def touch(self, *, m: bool = True, c: bool = True) -> None:
        now = time.time_ns()
        if m:
            self.attr.mtime_ns = now
        if c:
            self.attr.ctime_ns = now


def kill_privs(node: Inode) -> None:
    """Like the kernel for a write or truncate by a caller without CAP_FSETID: clear setuid, and
    setgid when the file is group-executable."""
    if pyfuse.context().uid == 0:
        return
    kill = stat.S_ISUID | (stat.S_ISGID if node.attr.mode & stat.S_IXGRP else 0)
    node.attr.mode &= ~kill


def _change(node: Inode, change: Callable[[bytearray], None]) -> None:
    """Apply ``change`` to the file's data, then update its size. A bytearray cannot change
    length while a read's view of it is still being copied into a reply (BufferError): the file
    then gets a new buffer, and the reader keeps the old one."""
    try:
        change(node.data)
    except BufferError:
        node.data = bytearray(node.data)
        change(node.data)
    node.attr.size = n = len(node.data)  # readdirplus hands out node.attr: keep it in step
    node.attr.blocks = (n + 511) // 512


class Store:
    """The tree: the root, the inode numbers, the open files; every change a request makes."""

    def __init__(self) -> None:
        self.mutex = threading.RLock()
        self.next_ino = 1
        #: Inodes by number (the inode API frees unlinked ones from here; see memory_ll).
        self.inodes: dict[int, Inode] = {}
        self.root = self.new(stat.S_IFDIR | 0o755, os.getuid(), os.getgid())
        self.root.attr.nlink = 2
        self.root.parent = self.root
        self.files: dict[int, Inode] = {}  # open file handles
        self.next_fh = 1

    # -- nodes and names -------------------------------------------------------------------
    def new(self, mode: int, uid: int, gid: int, rdev: int = 0) -> Inode:
        node = Inode(self.next_ino, mode, uid, gid, rdev)
        self.inodes[self.next_ino] = node
        self.next_ino += 1
        return node

    def add(self, parent: Inode, name: str, mode: int, rdev: int = 0) -> Inode:
        """A new node ``name`` in ``parent``, owned by the caller (setgid directories pass
        their group on)."""
        _check_new_name(parent, name)
        ctx = pyfuse.context()
        gid = ctx.gid
        if parent.attr.mode & stat.S_ISGID:
            gid = parent.attr.gid
            if stat.S_ISDIR(mode):
                mode |= stat.S_ISGID
        node = self.new(mode, ctx.uid, gid, rdev)
        parent.children[name] = node
        if node.is_dir:
            node.attr.nlink = 2
            node.parent = parent
            parent.attr.nlink += 1
        parent.touch()
        return node

    def symlink(self, parent: Inode, name: str, target: str) -> Inode:
        node = self.add(parent, name, stat.S_IFLNK | 0o777)
        node.target = os.fsencode(target)
        node.attr.size = len(node.target)
        return node

    def link(self, node: Inode, parent: Inode, name: str) -> None:
        if node.is_dir:
            raise err(errno.EPERM)
        _check_new_name(parent, name)
        parent.children[name] = node
        node.attr.nlink += 1
        node.touch(m=False)
        parent.touch()

    def remove(self, parent: Inode, name: str, want_dir: bool) -> Inode:
        """Remove a name (rmdir when ``want_dir``); returns its node."""
        node = parent.children.get(name)
        if node is None:
            raise err(errno.ENOENT)
        if want_dir:
            if not node.is_dir:
                raise err(errno.ENOTDIR)
            if node.children:
                raise err(errno.ENOTEMPTY)
            parent.attr.nlink -= 1
            node.attr.nlink = 0
        else:
            if node.is_dir:
                raise err(errno.EISDIR)
            node.attr.nlink -= 1
        del parent.children[name]
        node.touch(m=False)
        parent.touch()
        return node

    def rename(self, sp: Inode, sname: str, dp: Inode, dname: str, flags: int
               ) -> Optional[Inode]:
        """rename/renameat2; returns the node that lost its name to it, if any."""
        if flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE) or flags == (
                RENAME_NOREPLACE | RENAME_EXCHANGE):
            raise err(errno.EINVAL)
        if not dp.is_dir:
            raise err(errno.ENOTDIR)
        node = sp.children.get(sname)
        if node is None:
            raise err(errno.ENOENT)
        other = dp.children.get(dname)
        if other is node:
            return None  # two names of one inode: POSIX says do nothing (exchange them too)
        if node.is_dir and self.is_ancestor(node, dp):
            raise err(errno.EINVAL)  # moving a directory below itself
        if flags & RENAME_EXCHANGE:
            if other is None:
                raise err(errno.ENOENT)
            if other.is_dir and self.is_ancestor(other, sp):
                raise err(errno.EINVAL)
            sp.children[sname], dp.children[dname] = other, node
            self._moved(node, sp, dp)
            self._moved(other, dp, sp)
            sp.touch()
            dp.touch()
            return None
        if other is not None:
            if flags & RENAME_NOREPLACE:
                raise err(errno.EEXIST)
            if node.is_dir and not other.is_dir:
                raise err(errno.ENOTDIR)
            if not node.is_dir and other.is_dir:
                raise err(errno.EISDIR)
            if other.is_dir:
                if other.children:
                    raise err(errno.ENOTEMPTY)
                dp.attr.nlink -= 1
                other.attr.nlink = 0
            else:
                other.attr.nlink -= 1
            other.touch(m=False)
        del sp.children[sname]
        dp.children[dname] = node
        self._moved(node, sp, dp)
        sp.touch()
        dp.touch()
        return other

    @staticmethod
    def _moved(node: Inode, frm: Inode, to: Inode) -> None:
        """``node`` was renamed from directory ``frm`` into ``to``: a directory's ".." link
        moves with it; its ctime changes."""
        if node.is_dir and frm is not to:
            frm.attr.nlink -= 1
            to.attr.nlink += 1
            node.parent = to
        node.touch(m=False)

    def is_ancestor(self, node: Inode, d: Inode) -> bool:
        while True:
            if d is node:
                return True
            if d is self.root:
                return False
            assert d.parent is not None
            d = d.parent

    # -- attributes ------------------------------------------------------------------------
    @staticmethod
    def chmod(node: Inode, mode: int) -> None:
        node.attr.mode = stat.S_IFMT(node.attr.mode) | (mode & 0o7777)
        node.touch(m=False)

    @staticmethod
    def chown(node: Inode, uid: int, gid: int) -> None:
        """-1 leaves a field alone."""
        if uid != -1:
            node.attr.uid = uid
        if gid != -1:
            node.attr.gid = gid
        if not node.is_dir and (uid != -1 or gid != -1):
            # like the kernel: chown clears setuid, and setgid when group-executable
            mode = node.attr.mode & ~stat.S_ISUID
            if mode & stat.S_IXGRP:
                mode &= ~stat.S_ISGID
            node.attr.mode = mode
        node.touch(m=False)

    def truncate(self, node: Inode, size: int, by_fd: bool) -> None:
        if node.is_dir:
            raise err(errno.EISDIR)
        changed = size != len(node.data)
        self.resize(node, size)
        kill_privs(node)
        if changed or by_fd:  # like tmpfs: truncate(2) to the same size is no change
            node.touch()

    @staticmethod
    def resize(node: Inode, size: int) -> None:
        if size > MAX_FILE_SIZE:
            raise err(errno.EFBIG)

        def resize(buf: bytearray) -> None:
            cur = len(buf)
            if size < cur:
                del buf[size:]
            elif size > cur:
                buf.extend(bytes(size - cur))

        _change(node, resize)

    @staticmethod
    def utimens(node: Inode, atime_ns: Optional[int], mtime_ns: Optional[int]) -> None:
        if atime_ns is not None:
            node.attr.atime_ns = atime_ns
        if mtime_ns is not None:
            node.attr.mtime_ns = mtime_ns
        node.touch(m=False)

    # -- files -----------------------------------------------------------------------------
    def open(self, node: Inode, flags: int) -> int:
        """A new handle of ``node`` (O_TRUNC applied: libfuse's atomic O_TRUNC brings it)."""
        if flags & os.O_TRUNC and stat.S_ISREG(node.attr.mode):
            self.resize(node, 0)
            kill_privs(node)
            node.touch()
        fh = self.next_fh
        self.next_fh += 1
        self.files[fh] = node
        node.opened += 1
        return fh

    def release(self, fh: int) -> Optional[Inode]:
        node = self.files.pop(fh, None)
        if node is not None:
            node.opened -= 1
        return node

    @staticmethod
    def write(node: Inode, data: memoryview, offset: int) -> int:
        n = len(data)
        if offset + n > MAX_FILE_SIZE:
            raise err(errno.EFBIG)

        def store(buf: bytearray) -> None:
            if offset > len(buf):
                buf.extend(bytes(offset - len(buf)))
            if offset == len(buf):
                buf += data  # appends are amortised O(1)
            else:
                buf[offset:offset + n] = data

        _change(node, store)
        kill_privs(node)
        node.touch()
        return n

    def fallocate(self, node: Inode, mode: int, offset: int, length: int) -> None:
        end = offset + length
        if mode & FALLOC_FL_PUNCH_HOLE:
            if not mode & FALLOC_FL_KEEP_SIZE:
                raise err(errno.EOPNOTSUPP)
            stop = min(end, len(node.data))
            if offset < stop:
                node.data[offset:stop] = bytes(stop - offset)
        elif mode & ~FALLOC_FL_KEEP_SIZE:
            raise err(errno.EOPNOTSUPP)
        elif end > len(node.data) and not mode & FALLOC_FL_KEEP_SIZE:
            self.resize(node, end)
        node.touch()

    @staticmethod
    def lseek(node: Inode, offset: int, whence: int) -> int:
        size = len(node.data)
        if offset >= size:
            raise err(errno.ENXIO)
        return offset if whence == os.SEEK_DATA else size  # no holes are tracked

    def statfs(self) -> pyfuse.StatVFS:
        used = sum(len(n.data) for n in self.inodes.values())
        count = len(self.inodes)
        total = 1 << 30
        free = max(total - used, 0) // BLOCK
        return pyfuse.StatVFS(f_bsize=BLOCK, f_frsize=BLOCK, f_blocks=total // BLOCK,
                              f_bfree=free, f_bavail=free, f_files=1 << 20,
                              f_ffree=(1 << 20) - count, f_favail=(1 << 20) - count,
                              f_namemax=255)

    # -- extended attributes ---------------------------------------------------------------
    @staticmethod
    def setxattr(node: Inode, name: str, value: bytes, flags: int, posix_acl: bool) -> None:
        """``posix_acl``: the kernel applies system.posix_acl_* (Config(posix_acl=True)), so
        they are stored; otherwise they are refused (EOPNOTSUPP), since storing them unapplied
        would tell cp -a and setfacl that permissions were set."""
        if name.startswith("system.posix_acl_") and not posix_acl:
            raise err(errno.EOPNOTSUPP)
        if flags & os.XATTR_CREATE and name in node.xattrs:
            raise err(errno.EEXIST)
        if flags & os.XATTR_REPLACE and name not in node.xattrs:
            raise err(errno.ENODATA)
        node.xattrs[name] = bytes(value)
        node.touch(m=False)

    @staticmethod
    def getxattr(node: Inode, name: str) -> bytes:
        try:
            return node.xattrs[name]
        except KeyError:
            raise err(errno.ENODATA) from None

    @staticmethod
    def removexattr(node: Inode, name: str) -> None:
        if node.xattrs.pop(name, None) is None:
            raise err(errno.ENODATA)
        node.touch(m=False)
