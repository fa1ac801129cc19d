"""An in-memory filesystem written against pyfuse3's API (inode numbers, bytes names,
readdir_reply, EntryAttributes, lookup counts kept by the filesystem as pyfuse3 teaches).
Usage: p3fs.py [--asyncio] MOUNTPOINT. PYFUSE3_MODULE names the module (default pyfuse3);
P3FS_TIMEOUT the entry and attribute timeouts (seconds, default 0). The root's xattrs
user.p3fs.lookups and user.p3fs.creator (not listed) are the number of lookup calls so far
and the pid, uid and gid of the last create's ctx, as read after that request's reply.
Open files' handles have bit 63 set (FH_BIT). P3FS_MAX_TASKS: main(max_tasks=N);
P3FS_SLOW=1: each read waits 0.3 s, and user.p3fs.most is the most reads that were in
progress at once. A name that is not ``bytes`` fails its
request, as it never is on pyfuse3."""
from __future__ import annotations

import errno
import importlib
import os
import stat
import sys
import time

pyfuse3 = importlib.import_module(os.environ.get("PYFUSE3_MODULE", "pyfuse3"))


#: Open files' handles are their inode with bit 63 set (pyfuse3's fh is a uint64_t): a
#: binding that took that bit for its own would serve inode 3's reads from descriptor 3.
FH_BIT = 1 << 63


def _ino_of(fh):
    """The inode of an open file's handle (which must have come back with its bit 63)."""
    if not fh & FH_BIT:
        raise ValueError(f"file handle {fh:#x} came back without bit 63")
    return fh & ~FH_BIT


def _bytes(*names):
    """pyfuse3 hands names over as bytes: anything else fails the request (EIO)."""
    for name in names:
        if type(name) is not bytes:
            raise TypeError(f"name {name!r} is not bytes")


class Node:
    def __init__(self, ino, mode):
        now = time.time_ns()
        self.ino, self.mode, self.data, self.xattrs = ino, mode, b"", {}
        self.children = {} if stat.S_ISDIR(mode) else None
        self.nlink = 2 if stat.S_ISDIR(mode) else 1
        self.atime = self.mtime = self.ctime = now
        self.target = b""


class P3Memory(pyfuse3.Operations):
    def __init__(self):
        super().__init__()
        self.nodes = {pyfuse3.ROOT_INODE: Node(pyfuse3.ROOT_INODE, stat.S_IFDIR | 0o755)}
        self.next_ino = pyfuse3.ROOT_INODE + 1
        self.lookups = {}
        self.lookup_calls = 0
        self.last_ctx = None
        self.open_fhs = {}
        self.timeout = float(os.environ.get("P3FS_TIMEOUT", "0"))
        self.slow = os.environ.get("P3FS_SLOW") == "1"
        self.reading = self.most = 0

    def _attr(self, n):
        a = pyfuse3.EntryAttributes()
        a.st_ino, a.st_mode, a.st_nlink = n.ino, n.mode, n.nlink
        a.st_size = len(n.target) if stat.S_ISLNK(n.mode) else len(n.data)
        a.st_atime_ns, a.st_mtime_ns, a.st_ctime_ns = n.atime, n.mtime, n.ctime
        a.st_uid, a.st_gid = os.getuid(), os.getgid()
        a.entry_timeout = a.attr_timeout = self.timeout
        return a

    def _node(self, ino):
        try:
            return self.nodes[ino]
        except KeyError:
            raise pyfuse3.FUSEError(errno.ENOENT) from None

    def _looked_up(self, n):
        self.lookups[n.ino] = self.lookups.get(n.ino, 0) + 1
        return self._attr(n)

    async def lookup(self, parent_inode, name, ctx):
        _bytes(name)
        self.lookup_calls += 1
        d = self._node(parent_inode)
        if name not in d.children:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return self._looked_up(self.nodes[d.children[name]])

    async def forget(self, inode_list):
        for ino, n in inode_list:
            self.lookups[ino] = self.lookups.get(ino, 0) - n
            if self.lookups[ino] == 0:
                del self.lookups[ino]

    async def getattr(self, inode, ctx=None):
        return self._attr(self._node(inode))

    async def setattr(self, inode, attr, fields, fh, ctx):
        n = self._node(inode)
        if fields.update_size:
            n.data = n.data[:attr.st_size].ljust(attr.st_size, b"\0")
        if fields.update_mode:
            n.mode = (n.mode & ~0o7777) | (attr.st_mode & 0o7777)
        if fields.update_atime:
            n.atime = attr.st_atime_ns
        if fields.update_mtime:
            n.mtime = attr.st_mtime_ns
        n.ctime = time.time_ns()
        return self._attr(n)

    def _add(self, parent_inode, name, mode):
        d = self._node(parent_inode)
        if name in d.children:
            raise pyfuse3.FUSEError(errno.EEXIST)
        n = Node(self.next_ino, mode)
        self.next_ino += 1
        self.nodes[n.ino] = n
        d.children[name] = n.ino
        if stat.S_ISDIR(mode):
            d.nlink += 1
        return n

    async def mkdir(self, parent_inode, name, mode, ctx):
        _bytes(name)
        return self._looked_up(self._add(parent_inode, name, mode))

    async def symlink(self, parent_inode, name, target, ctx):
        _bytes(name, target)
        n = self._add(parent_inode, name, stat.S_IFLNK | 0o777)
        n.target = target
        return self._looked_up(n)

    async def readlink(self, inode, ctx):
        return self._node(inode).target

    async def create(self, parent_inode, name, mode, flags, ctx):
        _bytes(name)
        self.last_ctx = ctx  # read later, after the reply (user.p3fs.creator)
        n = self._add(parent_inode, name, mode)
        return pyfuse3.FileInfo(fh=n.ino | FH_BIT), self._looked_up(n)

    async def open(self, inode, flags, ctx):
        n = self._node(inode)
        if flags & os.O_TRUNC:
            n.data = b""
        return pyfuse3.FileInfo(fh=inode | FH_BIT)

    async def read(self, fh, off, size):
        if self.slow:
            self.reading += 1
            self.most = max(self.most, self.reading)
            try:
                await SLEEP(0.3)
            finally:
                self.reading -= 1
        return self.nodes[_ino_of(fh)].data[off:off + size]

    async def write(self, fh, off, buf):
        n = self.nodes[_ino_of(fh)]
        n.data = n.data[:off].ljust(off, b"\0") + buf + n.data[off + len(buf):]
        n.mtime = n.ctime = time.time_ns()
        return len(buf)

    async def release(self, fh):
        pass

    async def unlink(self, parent_inode, name, ctx):
        _bytes(name)
        d = self._node(parent_inode)
        if name not in d.children:
            raise pyfuse3.FUSEError(errno.ENOENT)
        n = self.nodes[d.children.pop(name)]
        n.nlink -= 1

    async def rmdir(self, parent_inode, name, ctx):
        _bytes(name)
        d = self._node(parent_inode)
        n = self.nodes[d.children[name]]
        if n.children:
            raise pyfuse3.FUSEError(errno.ENOTEMPTY)
        del d.children[name]
        d.nlink -= 1

    async def rename(self, parent_inode_old, name_old, parent_inode_new, name_new, flags, ctx):
        _bytes(name_old, name_new)
        if flags:
            raise pyfuse3.FUSEError(errno.EINVAL)
        src, dst = self._node(parent_inode_old), self._node(parent_inode_new)
        dst.children[name_new] = src.children.pop(name_old)

    async def opendir(self, inode, ctx):
        return inode

    async def readdir(self, fh, start_id, token):
        d = self.nodes[fh]
        for i, (name, ino) in enumerate(sorted(d.children.items())):
            if i < start_id:
                continue
            if not pyfuse3.readdir_reply(token, name, self._attr(self.nodes[ino]), i + 1):
                break
            self.lookups[ino] = self.lookups.get(ino, 0) + 1  # readdir_reply counts one

    async def setxattr(self, inode, name, value, ctx):
        _bytes(name)
        self._node(inode).xattrs[name] = value

    async def getxattr(self, inode, name, ctx):
        _bytes(name)
        if inode == pyfuse3.ROOT_INODE and name == b"user.p3fs.most":
            return str(self.most).encode()
        if inode == pyfuse3.ROOT_INODE and name == b"user.p3fs.lookups":
            return str(self.lookup_calls).encode()
        if inode == pyfuse3.ROOT_INODE and name == b"user.p3fs.creator":
            c = self.last_ctx
            return f"{c.pid} {c.uid} {c.gid}".encode()
        try:
            return self._node(inode).xattrs[name]
        except KeyError:
            raise pyfuse3.FUSEError(pyfuse3.ENOATTR) from None

    async def listxattr(self, inode, ctx):
        return list(self._node(inode).xattrs)

    async def removexattr(self, inode, name, ctx):
        _bytes(name)
        try:
            del self._node(inode).xattrs[name]
        except KeyError:
            raise pyfuse3.FUSEError(pyfuse3.ENOATTR) from None

    async def statfs(self, ctx):
        s = pyfuse3.StatvfsData()
        s.f_bsize, s.f_frsize, s.f_blocks, s.f_bfree, s.f_bavail = 512, 512, 4096, 2048, 2048
        s.f_files, s.f_ffree, s.f_favail, s.f_namemax = 100, 50, 50, 255
        return s


if __name__ == "__main__":
    use_asyncio = sys.argv[1] == "--asyncio"
    fs = P3Memory()
    options = set(pyfuse3.default_options)
    options.discard("default_permissions")
    options.add("fsname=p3fs")
    pyfuse3.init(fs, sys.argv[-1], options)
    max_tasks = int(os.environ.get("P3FS_MAX_TASKS", "99"))
    try:
        if use_asyncio:
            import asyncio

            SLEEP = asyncio.sleep
            importlib.import_module(pyfuse3.__name__ + ".asyncio").enable()
            asyncio.run(pyfuse3.main(max_tasks=max_tasks))
        else:
            import trio

            SLEEP = trio.sleep
            trio.run(lambda: pyfuse3.main(max_tasks=max_tasks))
    except BaseException:
        pyfuse3.close(unmount=False)
        raise
    pyfuse3.close()
