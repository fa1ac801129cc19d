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
And files are not sparse: their data is held in RAM up to ``MAX_FILE_SIZE`` (half of the
machine's memory, as tmpfs's default size); writing beyond it fails with ``EFBIG`` where tmpfs
would make a hole.

File data lives in a ``bytearray`` per file, so sequential appends are amortised O(1); a read
returns a view of it, which pyfuse copies once into the reply. One lock serialises all
operations: handlers run on several threads.
"""
from __future__ import annotations

import errno
import os
import stat
import threading
import time
from typing import Callable, Iterator, Optional, Sequence, Union

import pyfuse
from pyfuse import Attr, DirEntry, FuseError

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
FALLOC_FL_KEEP_SIZE = 1
FALLOC_FL_PUNCH_HOLE = 2
#: File data is held in RAM and not sparse: like tmpfs's default size limit, half of the
#: machine's memory; a write or truncate beyond it fails with EFBIG.
MAX_FILE_SIZE = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
BLOCK = 4096


class Inode:
    """A file, directory, symlink or special node: attributes plus what the type needs."""

    __slots__ = ("attr", "data", "children", "target", "xattrs", "parent")

    def __init__(self, ino: int, mode: int, uid: int, gid: int, rdev: int = 0) -> None:
        now = time.time_ns()
        self.attr = Attr(mode=mode, ino=ino, nlink=1, uid=uid, gid=gid, rdev=rdev,
                         atime_ns=now, mtime_ns=now, ctime_ns=now)
        self.data = bytearray()
        self.children: dict[str, Inode] = {}
        self.target = b""
        self.xattrs: dict[str, bytes] = {}
        self.parent: Optional[Inode] = None  # directories only

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.attr.mode)

    def touch(self, *, m: bool = True, c: bool = True) -> None:
        now = time.time_ns()
        if m:
            self.attr.mtime_ns = now
        if c:
            self.attr.ctime_ns = now


def _kill_privs(node: Inode) -> None:
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
    _sized(node)


def _sized(node: Inode) -> None:
    """Keep size and blocks in step with the data (readdirplus hands out node.attr)."""
    node.attr.size = n = len(node.data)
    node.attr.blocks = (n + 511) // 512


def _err(code: int) -> FuseError:
    return FuseError(code)


class Memory(pyfuse.Operations):
    """The in-memory filesystem; see the module docstring."""

    def __init__(self, posix_acl: bool = False) -> None:
        #: Mounted with Config(posix_acl=True): the kernel applies the system.posix_acl_*
        #: attributes, so they are stored; otherwise they are refused (EOPNOTSUPP), since
        #: storing them unapplied would tell cp -a and setfacl that permissions were set.
        self.posix_acl = posix_acl
        self._mutex = threading.RLock()
        self.next_ino = 1
        self.root = self._new(stat.S_IFDIR | 0o755, os.getuid(), os.getgid())
        self.root.attr.nlink = 2
        self.root.parent = self.root
        self.files: dict[int, Inode] = {}  # open file handles
        self.next_fh = 1

    # -- helpers ---------------------------------------------------------------------------
    def _new(self, mode: int, uid: int, gid: int, rdev: int = 0) -> Inode:
        node = Inode(self.next_ino, mode, uid, gid, rdev)
        self.next_ino += 1
        return node

    def _lookup(self, path: str) -> Inode:
        node = self.root
        for part in path.split("/"):
            if not part:
                continue
            if not node.is_dir:
                raise _err(errno.ENOTDIR)
            try:
                node = node.children[part]
            except KeyError:
                raise _err(errno.ENOENT) from None
        return node

    def _node(self, path: Optional[str], fh: Optional[int]) -> Inode:
        if fh is not None and fh in self.files:
            return self.files[fh]
        if path is None:
            raise _err(errno.EBADF)
        return self._lookup(path)

    def _parent(self, path: str) -> tuple[Inode, str]:
        head, _, name = path.rpartition("/")
        parent = self._lookup(head or "/")
        if not parent.is_dir:
            raise _err(errno.ENOTDIR)
        if len(os.fsencode(name)) > 255:
            raise _err(errno.ENAMETOOLONG)
        return parent, name

    def _add(self, path: str, mode: int, rdev: int = 0) -> Inode:
        parent, name = self._parent(path)
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

    def _open_handle(self, node: Inode) -> int:
        fh = self.next_fh
        self.next_fh += 1
        self.files[fh] = node
        return fh

    # -- attributes and names ----------------------------------------------------------------
    def getattr(self, path: Optional[str], fh: Optional[int]) -> Attr:
        with self._mutex:
            node = self._node(path, fh)
            return node.attr.copy()

    def readlink(self, path: str) -> bytes:
        with self._mutex:
            node = self._lookup(path)
            if not stat.S_ISLNK(node.attr.mode):
                raise _err(errno.EINVAL)
            return node.target

    def mknod(self, path: str, mode: int, rdev: int) -> None:
        with self._mutex:
            self._add(path, mode, rdev)

    def mkdir(self, path: str, mode: int) -> None:
        with self._mutex:
            self._add(path, stat.S_IFDIR | (mode & 0o7777))

    def symlink(self, target: str, path: str) -> None:
        with self._mutex:
            node = self._add(path, stat.S_IFLNK | 0o777)
            node.target = os.fsencode(target)
            node.attr.size = len(node.target)

    def link(self, old: str, new: str) -> None:
        with self._mutex:
            node = self._lookup(old)
            if node.is_dir:
                raise _err(errno.EPERM)
            parent, name = self._parent(new)
            if name in parent.children:
                raise _err(errno.EEXIST)
            parent.children[name] = node
            node.attr.nlink += 1
            node.touch(m=False)
            parent.touch()

    def _remove(self, path: str, want_dir: bool) -> None:
        parent, name = self._parent(path)
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

    def unlink(self, path: str) -> None:
        with self._mutex:
            self._remove(path, want_dir=False)

    def rmdir(self, path: str) -> None:
        with self._mutex:
            self._remove(path, want_dir=True)

    def rename(self, old: str, new: str, flags: int) -> None:
        with self._mutex:
            if flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE) or flags == (
                    RENAME_NOREPLACE | RENAME_EXCHANGE):
                raise _err(errno.EINVAL)
            sp, sname = self._parent(old)
            dp, dname = self._parent(new)
            node = sp.children.get(sname)
            if node is None:
                raise _err(errno.ENOENT)
            other = dp.children.get(dname)
            if node.is_dir and self._is_ancestor(node, dp):
                raise _err(errno.EINVAL)  # moving a directory below itself
            if flags & RENAME_EXCHANGE:
                if other is None:
                    raise _err(errno.ENOENT)
                if other.is_dir and self._is_ancestor(other, sp):
                    raise _err(errno.EINVAL)
                sp.children[sname], dp.children[dname] = other, node
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
            del sp.children[sname]
            dp.children[dname] = node
            if node.is_dir and sp is not dp:
                sp.attr.nlink -= 1
                dp.attr.nlink += 1
                node.parent = dp
            node.touch(m=False)
            sp.touch()
            dp.touch()

    def _is_ancestor(self, node: Inode, d: Inode) -> bool:
        while True:
            if d is node:
                return True
            if d is self.root:
                return False
            assert d.parent is not None
            d = d.parent

    def chmod(self, path: Optional[str], mode: int, fh: Optional[int]) -> None:
        with self._mutex:
            node = self._node(path, fh)
            node.attr.mode = stat.S_IFMT(node.attr.mode) | (mode & 0o7777)
            node.touch(m=False)

    def chown(self, path: Optional[str], uid: int, gid: int, fh: Optional[int]) -> None:
        with self._mutex:
            node = self._node(path, fh)
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

    def truncate(self, path: Optional[str], size: int, fh: Optional[int]) -> None:
        with self._mutex:
            node = self._node(path, fh)
            if node.is_dir:
                raise _err(errno.EISDIR)
            changed = size != len(node.data)
            self._resize(node, size)
            _kill_privs(node)
            if changed or fh is not None:  # like tmpfs: truncate(2) to the same size is no change
                node.touch()

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

    def utimens(self, path: Optional[str], atime_ns: Optional[int], mtime_ns: Optional[int],
                fh: Optional[int]) -> None:
        with self._mutex:
            node = self._node(path, fh)
            if atime_ns is not None:
                node.attr.atime_ns = atime_ns
            if mtime_ns is not None:
                node.attr.mtime_ns = mtime_ns
            node.touch(m=False)

    # -- files -------------------------------------------------------------------------------
    def open(self, path: str, flags: int) -> int:
        with self._mutex:
            node = self._lookup(path)
            if flags & os.O_TRUNC and stat.S_ISREG(node.attr.mode):
                self._resize(node, 0)  # libfuse enables atomic O_TRUNC: it arrives here
                _kill_privs(node)
                node.touch()
            return self._open_handle(node)

    def create(self, path: str, mode: int, flags: int) -> int:
        with self._mutex:
            node = self._add(path, stat.S_IFREG | (mode & 0o7777))
            return self._open_handle(node)

    def read(self, path: Optional[str], size: int, offset: int, fh: int) -> memoryview:
        with self._mutex:
            # a view, not a copy: pyfuse copies it once, into the reply
            return memoryview(self.files[fh].data)[offset:offset + size]

    def write(self, path: Optional[str], data: memoryview, offset: int, fh: int) -> int:
        n = len(data)
        if offset + n > MAX_FILE_SIZE:
            raise _err(errno.EFBIG)

        def store(buf: bytearray) -> None:
            if offset > len(buf):
                buf.extend(bytes(offset - len(buf)))
            if offset == len(buf):
                buf += data  # appends are amortised O(1)
            else:
                buf[offset:offset + n] = data

        with self._mutex:
            node = self.files[fh]
            _change(node, store)
            _kill_privs(node)
            node.touch()
            return n

    def release(self, path: Optional[str], fh: int) -> None:
        with self._mutex:
            self.files.pop(fh, None)

    def flush(self, path: Optional[str], fh: int) -> None:
        pass

    def fsync(self, path: Optional[str], datasync: bool, fh: int) -> None:
        pass

    def fallocate(self, path: Optional[str], mode: int, offset: int, length: int,
                  fh: int) -> None:
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

    def copy_file_range(self, path_in: Optional[str], fh_in: int, offset_in: int,
                        path_out: Optional[str], fh_out: int, offset_out: int, size: int,
                        flags: int) -> int:
        with self._mutex:
            chunk = bytes(self.files[fh_in].data[offset_in:offset_in + size])
        return self.write(path_out, memoryview(chunk), offset_out, fh_out) if chunk else 0

    def lseek(self, path: Optional[str], offset: int, whence: int, fh: int) -> int:
        with self._mutex:
            size = len(self.files[fh].data)
        if offset >= size:
            raise _err(errno.ENXIO)
        return offset if whence == os.SEEK_DATA else size  # no holes are tracked

    def statfs(self, path: str) -> pyfuse.StatVFS:
        with self._mutex:
            used = self._bytes_used(self.root, set())
        total = 1 << 30
        free = max(total - used, 0) // BLOCK
        return pyfuse.StatVFS(f_bsize=BLOCK, f_frsize=BLOCK, f_blocks=total // BLOCK,
                              f_bfree=free, f_bavail=free, f_files=1 << 20,
                              f_ffree=(1 << 20) - self.next_ino, f_favail=(1 << 20) - self.next_ino,
                              f_namemax=255)

    def _bytes_used(self, node: Inode, seen: set[int]) -> int:
        """File data reachable from ``node``; each inode once (hard links)."""
        if node.attr.ino in seen:
            return 0
        seen.add(node.attr.ino)
        return len(node.data) + sum(self._bytes_used(c, seen) for c in node.children.values())

    # -- extended attributes -----------------------------------------------------------------
    def setxattr(self, path: str, name: str, value: bytes, flags: int) -> None:
        if name.startswith("system.posix_acl_") and not self.posix_acl:
            raise _err(errno.EOPNOTSUPP)
        with self._mutex:
            node = self._lookup(path)
            if flags & os.XATTR_CREATE and name in node.xattrs:
                raise _err(errno.EEXIST)
            if flags & os.XATTR_REPLACE and name not in node.xattrs:
                raise _err(errno.ENODATA)
            node.xattrs[name] = bytes(value)
            node.touch(m=False)

    def getxattr(self, path: str, name: str) -> bytes:
        with self._mutex:
            try:
                return self._lookup(path).xattrs[name]
            except KeyError:
                raise _err(errno.ENODATA) from None

    def listxattr(self, path: str) -> list[str]:
        with self._mutex:
            return list(self._lookup(path).xattrs)

    def removexattr(self, path: str, name: str) -> None:
        with self._mutex:
            node = self._lookup(path)
            if node.xattrs.pop(name, None) is None:
                raise _err(errno.ENODATA)
            node.touch(m=False)

    # -- directories -------------------------------------------------------------------------
    def readdir(self, path: str, offset: int, fh: int, plus: bool
                ) -> Iterator[Union[str, DirEntry]]:
        with self._mutex:
            node = self._lookup(path)
            if not node.is_dir:
                raise _err(errno.ENOTDIR)
            entries = list(node.children.items())
        yield "."
        yield ".."
        for name, child in entries:
            yield DirEntry(name, child.attr)


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
