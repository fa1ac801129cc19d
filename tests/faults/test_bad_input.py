"""Bad input from both sides: what clients send (long names, deep paths, huge offsets) and what
handlers return (impossible modes, absurd sizes, bad listings). Each gets a clear errno, and a
log line when a handler is at fault; the mount keeps serving."""
from __future__ import annotations

import errno
import os
from typing import Any, Optional

import pytest

import pyfuse
from pyfuse import Attr, DirEntry, FuseError
from pyfuse._core.readdir import READDIR_BATCH
from pyfuse.conformance import outcome


@pytest.fixture
def pair(tmpfs: Any, example: Any, mnt: str) -> tuple[str, str]:
    """(a tmpfs directory, the memory example's mount)."""
    example("memory", mountpoint=mnt)
    return tmpfs(), mnt


def same(pair: tuple[str, str], fn: Any, *names: str) -> tuple[str, Any]:
    a, b = (outcome(fn, *(os.path.join(root, n) for n in names)) for root in pair)
    assert a == b, f"{fn}: tmpfs {a}, pyfuse {b}"
    return a


def test_name_lengths(pair: tuple[str, str]) -> None:
    assert same(pair, lambda p: open(p, "w").close(), "x" * 255) == ("ok", None)
    assert same(pair, lambda p: open(p, "w").close(), "y" * 256) == ("err", "ENAMETOOLONG")
    assert same(pair, os.mkdir, "z" * 256) == ("err", "ENAMETOOLONG")
    assert same(pair, os.lstat, "w" * 1000)[1] == "ENAMETOOLONG"
    assert same(pair, lambda p: os.rename(p.replace("w" * 10, "x" * 255), p), "w" * 256) \
        == ("err", "ENAMETOOLONG")


def test_path_max(pair: tuple[str, str]) -> None:
    """Relative paths of 4095 and 4096 bytes (PATH_MAX counts the NUL), the same string on both
    sides through dir_fd, so only the filesystems differ."""
    deep = "/".join(["d" * 200] * 20)  # 4,019 bytes of directories
    for root in pair:
        os.makedirs(os.path.join(root, deep))
    fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY) for root in pair]
    try:
        def create(n: int) -> list[tuple[str, Any]]:
            rel = deep + "/" + "f" * (n - len(deep) - 1)
            assert len(rel) == n
            return [outcome(lambda d=fd: os.close(os.open(rel, os.O_CREAT | os.O_WRONLY, 0o644,
                                                           dir_fd=d))) for fd in fds]
        assert create(4095) == [("ok", None)] * 2
        assert create(4096) == [("err", "ENAMETOOLONG")] * 2
    finally:
        for fd in fds:
            os.close(fd)


def test_huge_offsets(pair: tuple[str, str]) -> None:
    for root in pair:
        with open(os.path.join(root, "f"), "wb") as f:
            f.write(b"abc")

    def at(offset: int, write: bool) -> Any:
        def op(p: str) -> Any:
            fd = os.open(p, os.O_RDWR)
            try:
                return os.pwrite(fd, b"x", offset) if write else os.pread(fd, 10, offset)
            finally:
                os.close(fd)
        return op

    for offset in (2**31, 2**32 + 7, 2**62, 2**63 - 2):
        same(pair, at(offset, False), "f")
    same(pair, at(2**63 - 1, True), "f")  # beyond the largest file size: EFBIG on both
    # tmpfs makes a hole; the memory example keeps data in RAM and is not sparse (its
    # docstring): a clear EFBIG, not EIO, and the file is unchanged
    assert outcome(at(2**62, True), os.path.join(pair[1], "f")) == ("err", "EFBIG")
    assert os.lstat(os.path.join(pair[1], "f")).st_size == 3


class Bad(pyfuse.Operations):
    """Handlers that return what they should not, per file name."""

    def getattr(self, path: str, fh: Optional[int]) -> Attr:
        if path == "/":
            return Attr(mode=0o40755, nlink=2)
        if path == "/nomode":
            return Attr(mode=0o644)  # no file type
        if path == "/badtype":
            return Attr(mode=0o170644)
        if path in ("/f", "/neg", "/big", "/str"):
            return Attr(mode=0o100644, size=10)
        raise FuseError(errno.ENOENT)

    def open(self, path: str, flags: int) -> int:
        return 1

    def write(self, path: str, data: memoryview, offset: int, fh: int) -> Any:
        return {"/neg": -1, "/big": len(data) + 1, "/str": "3"}.get(path, len(data))

    def readdir(self, path: str, offset: int, fh: int, plus: bool) -> Any:
        return self.listing

    listing: Any = []


@pytest.mark.expect_errors
@pytest.mark.parametrize("name", ["nomode", "badtype"])
def test_impossible_modes(mount_ops: Any, mnt: str, caplog: Any, name: str) -> None:
    mount_ops(Bad())
    with pytest.raises(OSError) as ei:
        os.lstat(os.path.join(mnt, name))
    assert ei.value.errno == errno.EIO
    assert "no valid file type" in caplog.text
    assert os.lstat(os.path.join(mnt, "f")).st_size == 10  # still serving


@pytest.mark.expect_errors
@pytest.mark.parametrize("name", ["neg", "big", "str"])
def test_absurd_write_counts(mount_ops: Any, mnt: str, caplog: Any, name: str) -> None:
    mount_ops(Bad())
    with open(os.path.join(mnt, name), "wb", buffering=0) as f:
        with pytest.raises(OSError) as ei:
            f.write(b"abc")
    assert ei.value.errno == errno.EIO
    assert "write must return the number of bytes written" in caplog.text


@pytest.mark.expect_errors
@pytest.mark.parametrize("listing, message", [
    (["a", "b", "a"], "same name twice"),
    ([DirEntry("a"), DirEntry("a", Attr(mode=0o100644))], "same name twice"),
    # the first and the last entry of one full batch: the C check covers the whole batch
    ([f"n{i}" for i in range(READDIR_BATCH - 1)] + ["n0"], "same name twice"),
    ([42], "must yield str"),
    ([None], "must yield str"),
    ([("a", Attr(mode=0o644))], "no valid file type"),
    (["x" * 256], "longer than 255"),
    (["a\0b"], "NUL"),
])
def test_bad_listings(mount_ops: Any, mnt: str, caplog: Any, listing: Any, message: str
                      ) -> None:
    ops = Bad()
    ops.listing = listing
    mount_ops(ops)
    with pytest.raises(OSError) as ei:
        os.listdir(mnt)
    assert ei.value.errno == errno.EIO
    assert message in caplog.text
    ops.listing = ["ok"]
    assert os.listdir(mnt) == ["ok"]  # still serving
