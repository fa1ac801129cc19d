"""Open files' handles on both native APIs: bit 63 of a handle marks, in C, an fd_backed file
whose reads and writes go straight to the file descriptor in its other bits. A handle a
filesystem gives with that bit set is refused (EIO, one logged error naming it): before it
was, such a file's reads and writes went to whatever descriptor of the daemon the other bits
named. (pyfuse.compat's sessions keep all 64 bits for the program:
tests/test_compat.py::test_file_handles_of_all_64_bits_as_on_the_peer.)"""
from __future__ import annotations

import errno
import logging
import os
import stat
from typing import Any, Optional

import pytest

import pyfuse
import pyfuse.lowlevel as ll
from pyfuse import Attr, FileInfo, FuseError

pytestmark = pytest.mark.timeout(60)

BIG = [1 << 63, (1 << 64) - 1, -1]


class _Handles:
    """What both test filesystems share: open returns ``fh``; reads echo the handle they are
    given, writes are kept with it (the first argument is the path or the inode)."""

    def __init__(self) -> None:
        self.fh: Any = 0
        self.written: list[tuple[int, bytes]] = []

    def open(self, where: Any, flags: int) -> Any:
        return self.fh

    def read(self, where: Any, size: int, offset: int, fh: int) -> bytes:
        return b"fh=%d" % fh

    def write(self, where: Any, data: memoryview, offset: int, fh: int) -> int:
        self.written.append((fh, bytes(data)))
        return len(data)


class PathFile(_Handles, pyfuse.Operations):
    """/f, through the path API."""

    def getattr(self, path: str, fh: Optional[int]) -> Attr:
        if path == "/":
            return Attr(mode=stat.S_IFDIR | 0o755, nlink=2)
        if path == "/f":
            return Attr(mode=stat.S_IFREG | 0o644, nlink=1, size=64)
        raise FuseError(errno.ENOENT)


class InodeFile(_Handles, ll.Operations):
    """The same through the inode API: inode 2 is /f."""

    def lookup(self, parent: int, name: str) -> Attr:
        if parent == 1 and name == "f":
            return Attr(mode=stat.S_IFREG | 0o644, ino=2, nlink=1, size=64)
        raise FuseError(errno.ENOENT)

    def getattr(self, ino: int, fh: Optional[int]) -> Attr:
        if ino == 1:
            return Attr(mode=stat.S_IFDIR | 0o755, ino=1, nlink=2)
        return Attr(mode=stat.S_IFREG | 0o644, ino=2, nlink=1, size=64)


def _ops(api: str) -> Any:
    return PathFile() if api == "path" else InodeFile()


@pytest.mark.parametrize("api", ["path", "inode"])
def test_handles_below_bit_63_round_trip(mount_ops: Any, mnt: str, api: str) -> None:
    ops = _ops(api)
    mount_ops(ops, config=pyfuse.Config(direct_io=True))
    p = os.path.join(mnt, "f")
    for fh in (0, 1, 12345, (1 << 63) - 1, FileInfo(fh=(1 << 63) - 1)):
        ops.fh = fh
        want = fh.fh if isinstance(fh, FileInfo) else fh
        with open(p, "r+b", buffering=0) as f:
            assert f.read(64) == b"fh=%d" % want
            assert f.write(b"data") == 4
        assert ops.written.pop() == (want, b"data")


@pytest.mark.expect_errors
@pytest.mark.parametrize("api", ["path", "inode"])
@pytest.mark.parametrize("bad", BIG + ["fd"], ids=repr)
def test_handles_with_bit_63_are_refused(mount_ops: Any, mnt: str, tmp_path: Any,
                                         caplog: Any, api: str, bad: Any) -> None:
    """A handle of 2**63 or more (or a negative one), bare or in a FileInfo, is EIO and one
    logged error that names it; "fd": 2**63 | the descriptor of a file of this process (the
    daemon's, mounted in-process), which reads and writes must not reach."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    fd = os.open(victim, os.O_RDWR)
    try:
        ops = _ops(api)
        mount_ops(ops, config=pyfuse.Config(direct_io=True))
        fh = (1 << 63) | fd if bad == "fd" else bad
        p = os.path.join(mnt, "f")
        for given in (fh, FileInfo(fh=fh)):
            ops.fh = given
            caplog.clear()
            with pytest.raises(OSError) as ei:
                with open(p, "r+b", buffering=0) as f:
                    f.read(64)
                    f.write(b"overwritten")
            assert ei.value.errno == errno.EIO
            errors = [r.getMessage() for r in caplog.records
                      if r.name == "pyfuse" and r.levelno >= logging.ERROR]
            assert len(errors) == 1 and f"the file handle {fh!r}" in errors[0], errors
        assert victim.read_bytes() == b"precious" and not ops.written
        ops.fh = 5  # and the mount goes on
        with open(p, "rb", buffering=0) as f:
            assert f.read(64) == b"fh=5"
    finally:
        os.close(fd)


@pytest.mark.parametrize("api", ["path", "inode"])
def test_fd_backed_handles_still_bypass_python(mount_ops: Any, mnt: str, tmp_path: Any,
                                               api: str) -> None:
    """The bit's own use: FileInfo(fh=fd, fd_backed=True) reads and writes the descriptor."""
    backing = tmp_path / "backing"
    backing.write_bytes(b"from the fd")
    fd = os.open(backing, os.O_RDWR)
    try:
        ops = _ops(api)
        mount_ops(ops, config=pyfuse.Config(direct_io=True))
        ops.fh = FileInfo(fh=fd, fd_backed=True)
        with open(os.path.join(mnt, "f"), "r+b", buffering=0) as f:
            assert f.read(64) == b"from the fd"
            assert f.write(b"!") == 1
        assert backing.read_bytes() == b"from the fd!" and not ops.written
    finally:
        os.close(fd)
