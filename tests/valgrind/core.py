"""The core paths of the shim, for `make test-valgrind` (memcheck).

    python tests/valgrind/core.py [VALGRIND ARGS...]

runs three daemons under ``valgrind VALGRIND ARGS python ...``, one after the other, and drives
each from this process:

- the path API (``core.py serve``, the filesystem below): getattr (valid and invalid modes),
  readdir and readdirplus batches with attributes and offsets, read (bytes and FdRange), write
  (memoryview and write_fd), an fd_backed open file, statfs, xattrs;
- the inode API as its example is run (``python -m pyfuse.examples.memory_ll``, every timeout
  0), and the same example with its lookup, getattr, open, create, read and write as
  ``async def`` (``core.py serve-ll``), both driven by :func:`exercise_ll`: every answer C
  sends from the thread's out struct (entries, attributes, open's handle, write's count, a
  read of up to 4,096 bytes copied, plain successes), a large read's reply call, listings,
  links, xattrs, fallocate, copy_file_range, lseek, statfs and an error.

Exits non-zero if a check fails; tests/valgrind/check_log.py reads the log."""
from __future__ import annotations

import errno
import functools
import os
import sys
import tempfile
from typing import Callable

import pyfuse
import pyfuse.lowlevel as ll
from pyfuse import Attr, DirEntry, FdRange, FileInfo, FuseError
from pyfuse.examples.memory_ll import MemoryLL

FILE = Attr(mode=0o100644, size=5)


class Core(pyfuse.Operations):
    def __init__(self, backing: str, fd: int) -> None:
        self.backing = backing
        self._fd = fd
        self.data = bytearray(b"hello")
        self.xattrs: dict[str, bytes] = {}

    def getattr(self, path, fh):
        if path == "/":
            return Attr(mode=0o40755, nlink=2)
        if path == "/bad":
            return Attr(mode=0o644)
        if path in ("/fd", "/backed"):
            return Attr(mode=0o100644, size=os.path.getsize(self.backing))
        if path == "/f" or path.startswith("/d/"):
            return Attr(mode=0o100644, size=len(self.data))
        if path == "/d":
            return Attr(mode=0o40755, nlink=2)
        raise FuseError(errno.ENOENT)

    def readdir(self, path, offset, fh, plus):
        if path == "/d":
            return ((f"e{i:04d}", FILE) for i in range(3000))
        if path == "/":
            d = Attr(mode=0o40755)
            return [DirEntry(".", d, 1), DirEntry("..", d, 2), DirEntry("f", FILE, 3),
                    DirEntry("d", d, 4), DirEntry("fd", FILE, 5), DirEntry("backed", FILE, 6)]
        return ["x", "x"]  # a duplicate: EIO

    def open(self, path, flags):
        if path == "/backed":
            return FileInfo(os.open(self.backing, os.O_RDWR), fd_backed=True)
        return 1

    def release(self, path, fh):
        if fh != 1:
            os.close(fh)

    def read(self, path, size, offset, fh):
        if path == "/fd":
            return FdRange(self._fd, offset)
        return bytes(self.data[offset:offset + size])

    def write(self, path, data, offset, fh):
        self.data[offset:offset + len(data)] = data
        return len(data)

    def write_fd(self, path, size, offset, fh):
        return FdRange(self._fd, offset) if path == "/fd" else None

    def truncate(self, path, size, fh):
        del self.data[size:]

    def statfs(self, path):
        return os.statvfs("/")

    def setxattr(self, path, name, value, flags):
        self.xattrs[name] = bytes(value)

    def getxattr(self, path, name):
        if name not in self.xattrs:
            raise FuseError(errno.ENODATA)
        return self.xattrs[name]

    def listxattr(self, path):
        return list(self.xattrs)


def serve(mnt: str, backing: str) -> None:
    fd = os.open(backing, os.O_RDWR)
    pyfuse.run(Core(backing, fd), mnt, config=pyfuse.Config(attr_timeout=0, entry_timeout=0))
    os.close(fd)


class AsyncMemoryLL(MemoryLL):
    """pyfuse's memory_ll example with its hot handlers as ``async def``: their answers take
    the later reply (the request asked of C, replied from the event loop)."""

    async def lookup(self, parent: int, name: str) -> Attr:  # type: ignore[override]
        return super().lookup(parent, name)

    async def getattr(self, ino: int, fh: object) -> Attr:  # type: ignore[override]
        return super().getattr(ino, fh)  # type: ignore[arg-type]

    async def open(self, ino: int, flags: int) -> int:  # type: ignore[override]
        return super().open(ino, flags)

    async def create(self, parent: int, name: str, mode: int,  # type: ignore[override]
                     flags: int) -> tuple[Attr, int]:
        return super().create(parent, name, mode, flags)

    async def read(self, ino: int, size: int, offset: int, fh: int) -> bytes:  # type: ignore[override]
        return super().read(ino, size, offset, fh)

    async def write(self, ino: int, data: memoryview, offset: int,  # type: ignore[override]
                    fh: int) -> int:
        return super().write(ino, data, offset, fh)


def serve_ll(mnt: str) -> None:
    ll.run(AsyncMemoryLL(), mnt, config=pyfuse.Config(attr_timeout=0, entry_timeout=0,
                                                      negative_timeout=0))


def exercise_ll(mnt: str, check: Callable[[str, bool], None]) -> None:
    """Drive a memory_ll mount: each operation whose answer C sends, with its result checked."""
    d = os.path.join(mnt, "d")
    f, g, s = os.path.join(d, "f"), os.path.join(d, "g"), os.path.join(d, "s")
    os.mkdir(d)
    big = bytes(range(256)) * 800  # 204,800 bytes: reads of more than 4,096 take the reply call
    with open(f, "w+b", buffering=0) as fh:  # create
        check("write count", fh.write(b"hello") == 5)
        fh.seek(0)
        fh.write(big)
        os.fsync(fh.fileno())
        os.posix_fallocate(fh.fileno(), 0, 300_000)
        check("fallocate", os.fstat(fh.fileno()).st_size == 300_000)
        os.ftruncate(fh.fileno(), 5000)
        check("lseek SEEK_DATA", os.lseek(fh.fileno(), 10, os.SEEK_DATA) == 10)
    fd = os.open(f, os.O_RDONLY | os.O_DIRECT)  # open; reads of the size asked
    try:
        check("read 16 bytes (copied into the out struct)", os.pread(fd, 16, 3) == big[3:19])
        check("read 4,096 bytes (copied)", os.pread(fd, 4096, 0) == big[:4096])
        check("read 4,097 bytes (reply call)", os.pread(fd, 4097, 1) == big[1:4098])
    finally:
        os.close(fd)
    os.chmod(f, 0o640)
    os.utime(f, ns=(1_000_000_001, 2_000_000_002))
    st = os.stat(f)
    check("setattr", (st.st_mode & 0o777, st.st_mtime_ns, st.st_size) == (0o640, 2_000_000_002,
                                                                            5000))
    os.link(f, g)
    check("link", os.stat(g).st_nlink == 2)
    os.symlink("f", s)
    check("symlink", os.readlink(s) == "f")
    os.rename(g, os.path.join(d, "h"))
    os.setxattr(f, "user.k", b"v" * 100)
    check("xattr", os.getxattr(f, "user.k") == b"v" * 100 and "user.k" in os.listxattr(f))
    os.removexattr(f, "user.k")
    for i in range(300):  # several listing batches
        with open(os.path.join(d, f"n{i:03d}"), "wb", buffering=0) as fh:
            fh.write(b"x" * i)
    with os.scandir(d) as it:
        sizes = {e.name: e.stat(follow_symlinks=False).st_size for e in it}
    check("readdirplus + stat", len(sizes) == 303 and sizes["n299"] == 299)
    src, dst = os.open(f, os.O_RDONLY), os.open(os.path.join(d, "n000"), os.O_WRONLY)
    try:
        check("copy_file_range", os.copy_file_range(src, dst, 1000) == 1000)
    finally:
        os.close(src)
        os.close(dst)
    os.mkfifo(os.path.join(d, "p"))
    check("statfs", os.statvfs(mnt).f_bsize > 0)
    try:
        os.lstat(os.path.join(d, "missing"))
        check("ENOENT", False)
    except FileNotFoundError:
        check("ENOENT", True)
    for name in os.listdir(d):
        os.unlink(os.path.join(d, name))
    os.rmdir(d)
    check("unlink, rmdir", os.listdir(mnt) == [])


def main(valgrind: list[str]) -> int:
    from pyfuse import testing

    tmp = tempfile.mkdtemp()
    mnt, backing = os.path.join(tmp, "m"), os.path.join(tmp, "b")
    os.mkdir(mnt)
    with open(backing, "wb", buffering=0) as f:
        f.write(b"backing data" * 1000)
    failures = []

    def check(what: str, ok: bool) -> None:
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        if not ok:
            failures.append(what)

    def check_as(daemon: str, what: str, ok: bool) -> None:
        check(f"{daemon}: {what}", ok)

    argv = [*valgrind, sys.executable, os.path.abspath(__file__), "serve", mnt, backing]
    with testing.mounted_process(argv, mnt, timeout=120):
        check("listdir /", sorted(os.listdir(mnt)) == ["backed", "d", "f", "fd"])
        with os.scandir(os.path.join(mnt, "d")) as it:
            check("scandir 3000 + stat", sum(1 for e in it if e.stat().st_size == 5) == 3000)
        try:
            os.lstat(os.path.join(mnt, "bad"))
            check("invalid mode -> EIO", False)
        except OSError as e:
            check("invalid mode -> EIO", e.errno == errno.EIO)
        with open(os.path.join(mnt, "f"), "r+b", buffering=0) as f:
            check("read bytes", f.read() == b"hello")
            f.seek(0)
            check("write memoryview", f.write(b"HELLO") == 5)
        with open(os.path.join(mnt, "fd"), "r+b", buffering=0) as f:
            check("read FdRange", f.read(12) == b"backing data")
            f.seek(0)
            f.write(b"BACKING")
        with open(backing, "rb", buffering=0) as f:
            check("write_fd", f.read(7) == b"BACKING")
        with open(os.path.join(mnt, "backed"), "r+b", buffering=0) as f:
            check("fd_backed read", f.read(7) == b"BACKING")
            f.write(b"!")
        os.statvfs(mnt)
        os.setxattr(os.path.join(mnt, "f"), "user.k", b"v")
        check("xattr", os.getxattr(os.path.join(mnt, "f"), "user.k") == b"v")
    example = [*valgrind, sys.executable, "-m", "pyfuse.examples.memory_ll", mnt,
               "-o", "attr_timeout=0,entry_timeout=0,negative_timeout=0"]
    for what, daemon in (("memory_ll", example),
                         ("async", [*valgrind, sys.executable, os.path.abspath(__file__),
                                    "serve-ll", mnt])):
        print(f"-- the inode API: {what}", flush=True)
        with testing.mounted_process(daemon, mnt, timeout=120):
            exercise_ll(mnt, functools.partial(check_as, what))
    os.unlink(backing)
    os.rmdir(mnt)
    os.rmdir(tmp)
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["serve-ll"]:
        serve_ll(sys.argv[2])
    else:
        sys.exit(main(sys.argv[1:]))
