"""The core paths of the shim, for `make test-valgrind` (memcheck).

    python tests/valgrind/core.py [VALGRIND ARGS...]

runs the filesystem below as a daemon under ``valgrind VALGRIND ARGS python core.py serve`` and
drives it from this process: mount, getattr (valid and invalid modes), readdir and readdirplus
batches with attributes and offsets, read (bytes and FdRange), write (memoryview and
write_fd), an fd_backed open file, statfs, xattrs; then unmount. Exits non-zero if a check
fails."""
from __future__ import annotations

import errno
import os
import sys
import tempfile

import pyfuse
from pyfuse import Attr, DirEntry, FdRange, FileInfo, FuseError

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


def main(valgrind: list[str]) -> int:
    from pyfuse import testing

    tmp = tempfile.mkdtemp()
    mnt, backing = os.path.join(tmp, "m"), os.path.join(tmp, "b")
    os.mkdir(mnt)
    with open(backing, "wb") as f:
        f.write(b"backing data" * 1000)
    failures = []

    def check(what: str, ok: bool) -> None:
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        if not ok:
            failures.append(what)

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
        with open(backing, "rb") as f:
            check("write_fd", f.read(7) == b"BACKING")
        with open(os.path.join(mnt, "backed"), "r+b", buffering=0) as f:
            check("fd_backed read", f.read(7) == b"BACKING")
            f.write(b"!")
        os.statvfs(mnt)
        os.setxattr(os.path.join(mnt, "f"), "user.k", b"v")
        check("xattr", os.getxattr(os.path.join(mnt, "f"), "user.k") == b"v")
    os.unlink(backing)
    os.rmdir(mnt)
    os.rmdir(tmp)
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2], sys.argv[3])
    else:
        sys.exit(main(sys.argv[1:]))
