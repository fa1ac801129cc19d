"""The inode API's answers that C sends after the callback has returned (the cheap crossing,
docs/design.md): open's file handle, write's count and the plain successes (unlink, flush,
release, fsync, ...), each from a synchronous and from an ``async def`` handler, and the bad
values that must still take the general reply, EIO and one logged error naming them."""
from __future__ import annotations

import errno
import logging
import os
import stat
import threading
from typing import Any, Optional

import pytest

import pyfuse
import pyfuse.lowlevel as ll
from pyfuse import Attr, FileInfo, FuseError

pytestmark = pytest.mark.timeout(60)

ROOT, FILE = 1, 2


class Files(ll.Operations):
    """One file, ``f``, whose open returns ``fhs[name]`` for the name of the flags (the
    handle its reads echo back), whose write returns ``counts`` in turn, and whose other
    handlers record their calls and return ``result`` (a value the kernel never sees)."""

    def __init__(self, asynchronous: bool = False) -> None:
        self.root = Attr(mode=stat.S_IFDIR | 0o755, ino=ROOT, nlink=2)
        self.file = Attr(mode=stat.S_IFREG | 0o644, ino=FILE, nlink=1, size=64)
        self.fh: Any = None
        self.counts: list[Any] = []
        self.result: Any = None
        self.calls: list[tuple[str, Any]] = []
        self.lock = threading.Lock()
        self.asynchronous = asynchronous

    def _answer(self, value: Any) -> Any:
        if not self.asynchronous:
            return value

        async def later() -> Any:
            return value
        return later()

    def _called(self, op: str, arg: Any) -> Any:
        with self.lock:
            self.calls.append((op, arg))
        return self._answer(self.result)

    def lookup(self, parent: int, name: str) -> Attr:
        if parent == ROOT and name in ("f", "g"):
            return self.file
        raise FuseError(errno.ENOENT)

    def getattr(self, ino: int, fh: Optional[int]) -> Attr:
        return self.root if ino == ROOT else self.file

    def open(self, ino: int, flags: int) -> Any:
        return self._answer(self.fh)

    def read(self, ino: int, size: int, offset: int, fh: int) -> bytes:
        return b"%d" % fh  # the handle the kernel gave back

    def write(self, ino: int, data: memoryview, offset: int, fh: int) -> Any:
        with self.lock:
            n = self.counts.pop(0) if self.counts else len(data)
        return self._answer(n)

    def flush(self, ino: int, fh: int) -> Any:
        return self._called("flush", fh)

    def release(self, ino: int, fh: int) -> Any:
        return self._called("release", fh)

    def fsync(self, ino: int, datasync: bool, fh: int) -> Any:
        return self._called("fsync", datasync)

    def unlink(self, parent: int, name: str) -> Any:
        return self._called("unlink", name)

    def setxattr(self, ino: int, name: str, value: bytes, flags: int) -> Any:
        return self._called("setxattr", (name, value))


def _errors(caplog: Any) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "pyfuse" and r.levelno >= logging.ERROR]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_open_handles_reach_the_kernel(mount_ops: Any, mnt: str, asynchronous: bool) -> None:
    """None is handle 0; any int of 0..2**63-1 comes back as it was given; a FileInfo's
    handle and flags too (the general reply)."""
    ops = Files(asynchronous)
    mount_ops(ops, config=pyfuse.Config(entry_timeout=0, attr_timeout=0))
    p = os.path.join(mnt, "f")
    for fh, want in ((None, 0), (0, 0), (7, 7), (1 << 40, 1 << 40),
                     ((1 << 63) - 1, (1 << 63) - 1), (FileInfo(fh=5, direct_io=True), 5)):
        ops.fh = fh
        with open(p, "rb", buffering=0) as f:
            assert f.read(64) == b"%d" % want, fh


@pytest.mark.expect_errors
@pytest.mark.parametrize("bad,message", [
    (-1, "open returned the file handle -1"), (1 << 63, "open returned the file handle"),
    ("3", "open must return an int"), (3.0, "open must return an int")])
def test_bad_open_handles_are_eio_and_logged(mount_ops: Any, mnt: str, caplog: Any, bad: Any,
                                             message: str) -> None:
    ops = Files()
    mount_ops(ops, config=pyfuse.Config(entry_timeout=0, attr_timeout=0))
    ops.fh = bad
    with pytest.raises(OSError) as ei:
        open(os.path.join(mnt, "f"), "rb").close()
    assert ei.value.errno == errno.EIO
    errors = _errors(caplog)
    assert len(errors) == 1 and message in errors[0], errors
    assert repr(bad) in errors[0] or type(bad).__name__ in errors[0], errors
    ops.fh = 3
    with open(os.path.join(mnt, "f"), "rb", buffering=0) as f:  # and the mount goes on
        assert f.read(64) == b"3"


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_write_counts_reach_the_writer(mount_ops: Any, mnt: str, asynchronous: bool) -> None:
    """The count a write returns is what write(2) returns, a short one included (a count of
    0 the kernel itself turns into EIO, on every binding)."""
    ops = Files(asynchronous)
    mount_ops(ops, config=pyfuse.Config(direct_io=True))
    fd = os.open(os.path.join(mnt, "f"), os.O_WRONLY)
    try:
        for data, count in ((b"abcdef", 6), (b"abcdef", 2), (b"x" * 4096, 4096), (b"abc", 1)):
            ops.counts = [count]
            assert os.pwrite(fd, data, 0) == count  # (at 0: one request, page-aligned)
    finally:
        os.close(fd)


@pytest.mark.expect_errors
@pytest.mark.parametrize("bad", [7, -1, True, 2.0, None], ids=repr)
def test_bad_write_counts_are_eio_and_logged(mount_ops: Any, mnt: str, caplog: Any,
                                             bad: Any) -> None:
    """More than was written (7 of 6), a negative count, a bool, a float or None: EIO and
    one error that names the value."""
    ops = Files()
    mount_ops(ops, config=pyfuse.Config(direct_io=True))
    fd = os.open(os.path.join(mnt, "f"), os.O_WRONLY)
    try:
        ops.counts = [bad]
        with pytest.raises(OSError) as ei:
            os.write(fd, b"abcdef")
        assert ei.value.errno == errno.EIO
        errors = _errors(caplog)
        assert len(errors) == 1 and "write" in errors[0] and \
            f"not {bad!r}" in errors[0], errors
        assert os.write(fd, b"abc") == 3  # and the mount goes on
    finally:
        os.close(fd)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("result", [None, 0, 42, "anything"], ids=repr)
def test_plain_successes_whatever_they_return(mount_ops: Any, mnt: str, asynchronous: bool,
                                              result: Any) -> None:
    """flush, release, fsync, setxattr and unlink succeed whatever a synchronous or async
    handler returns (the value says nothing: C replies success), and each is called once."""
    ops = Files(asynchronous)
    ops.result = result
    mount_ops(ops, config=pyfuse.Config(entry_timeout=0, attr_timeout=0))
    p = os.path.join(mnt, "f")
    ops.fh = 9
    fd = os.open(p, os.O_RDWR)
    os.fsync(fd)
    os.setxattr(p, "user.k", b"v")
    os.close(fd)
    os.unlink(os.path.join(mnt, "g"))
    assert ops.calls[:2] == [("fsync", False), ("setxattr", ("user.k", b"v"))], ops.calls
    assert ("flush", 9) in ops.calls and ("unlink", "g") in ops.calls
    # release comes after close(2) returns: wait for it
    for _ in range(500):
        if ("release", 9) in ops.calls:
            break
        threading.Event().wait(0.01)
    assert ("release", 9) in ops.calls, ops.calls


class Sized(ll.Operations):
    """Files /0 ... whose content is ``SIZES[k]`` bytes of a pattern of its own (reads give
    exactly the slice asked for; FileInfo(direct_io=True): every read reaches the handler)."""

    SIZES = [0, 1, 4095, 4096, 4097, 65536, 300000]

    def __init__(self, asynchronous: bool = False) -> None:
        self.asynchronous = asynchronous
        self.data = [bytes((k * 7 + i) & 0xFF for i in range(n)) for k, n in enumerate(self.SIZES)]

    def lookup(self, parent: int, name: str) -> Attr:
        if parent == ROOT and name.isdigit() and int(name) < len(self.SIZES):
            return self.getattr(int(name) + 2, None)
        raise FuseError(errno.ENOENT)

    def getattr(self, ino: int, fh: Optional[int]) -> Attr:
        if ino == ROOT:
            return Attr(mode=stat.S_IFDIR | 0o755, ino=ROOT, nlink=2)
        return Attr(mode=stat.S_IFREG | 0o644, ino=ino, nlink=1, size=len(self.data[ino - 2]))

    def open(self, ino: int, flags: int) -> FileInfo:
        return FileInfo(fh=ino, direct_io=True)

    def read(self, ino: int, size: int, offset: int, fh: int) -> Any:
        data = self.data[fh - 2][offset:offset + size]
        if not self.asynchronous:
            return data

        async def later() -> bytes:
            return data
        return later()


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_reads_small_and_large_are_byte_exact(mount_ops: Any, mnt: str,
                                              asynchronous: bool) -> None:
    """An answer of up to 4,096 bytes goes back in the out struct (C replies it), a larger
    one through libfuse's reply call: both byte-exact, whole and at odd offsets and sizes,
    from four threads at once (each thread's answer in its own out struct)."""
    ops = Sized(asynchronous)
    mount_ops(ops)

    def check(k: int) -> None:
        want = ops.data[k]
        p = os.path.join(mnt, str(k))
        with open(p, "rb", buffering=0) as f:
            assert f.read(1 << 20) == want, k
            for off, size in ((0, 1), (1, 4096), (4095, 2), (3, 5000), (len(want), 10)):
                assert os.pread(f.fileno(), size, off) == want[off:off + size], (k, off, size)

    for k in range(len(Sized.SIZES)):
        check(k)
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            for _ in range(30):
                check(k)
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(k,)) for k in (1, 2, 3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(50)
    assert not errors, errors
