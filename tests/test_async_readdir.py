"""An ``async def readdir`` that is an async generator (pyfuse.lowlevel): streamed across
READDIR requests a batch at a time (never the whole directory pulled ahead), yielded lists
taken as batches, ``finally:`` run when the reader stops early, an error after some entries
reported on the next request, and positional listings restarted at an offset."""
from __future__ import annotations

import asyncio
import ctypes
import errno
import os
import signal
import stat
import subprocess
import sys
from typing import Any, AsyncIterator, Optional

import pytest

import pyfuse.lowlevel as ll
from pyfuse import Attr, Config, DirEntry, FuseError, testing
from pyfuse._core.readdir import READDIR_BATCH
from pyfuse._pyfuse_c import ffi

ROOT = Attr(mode=stat.S_IFDIR | 0o755, ino=1, nlink=2)
FILE = Attr(mode=stat.S_IFREG | 0o644, ino=2)
N = 5000


class Paged(ll.Operations):
    """``/big``-like root of N names, listed by an async generator that awaits between
    pages, as a remote listing API would; ``pages`` yields lists, ``fail_at`` raises."""

    def __init__(self, pages: bool = False, fail_at: int = -1, offsets: bool = True) -> None:
        self.pages, self.fail_at, self.offsets = pages, fail_at, offsets
        self.pulled = 0
        self.finished = 0

    def lookup(self, parent: int, name: str) -> Attr:
        if name.startswith("n") and name[1:].isdigit() and int(name[1:]) < N:
            return Attr(mode=stat.S_IFREG | 0o644, ino=3 + int(name[1:]))
        raise FuseError(errno.ENOENT)

    def getattr(self, ino: int, fh: Optional[int]) -> Attr:
        return ROOT if ino == 1 else Attr(mode=stat.S_IFREG | 0o644, ino=ino)

    def opendir(self, ino: int, flags: int) -> None:
        """Defined: each listing is an open directory, whose releasedir closes a listing
        left half way (without it and with Config(no_open=True), no OPENDIR:
        docs/caching.md)."""

    def _entry(self, i: int) -> Any:
        off = i + 1 if self.offsets else 0
        return DirEntry(f"n{i}", None, off) if self.offsets else f"n{i}"

    async def readdir(self, ino: int, offset: int, fh: int, plus: bool) -> AsyncIterator[Any]:
        try:
            i = offset
            while i < N:
                await asyncio.sleep(0)  # a round trip
                if self.pages:
                    page = [self._entry(j) for j in range(i, min(N, i + 100))]
                    i += len(page)
                    self.pulled += len(page)
                    yield page
                    continue
                if i == self.fail_at:
                    raise FuseError(errno.EREMOTEIO)
                self.pulled += 1
                yield self._entry(i)
                i += 1
        finally:
            self.finished += 1


class Stalled(Paged):
    """Paged's pages with attributes (each READDIRPLUS entry counts a lookup); the fetch of the
    pages after entry 600 waits until ``go`` is set (``cancelled``: waits an interrupt ended)."""

    def __init__(self) -> None:
        super().__init__(pages=True)
        self.go = self.waiting = False
        self.cancelled = 0

    def _entry(self, i: int) -> Any:
        return f"n{i}", Attr(mode=stat.S_IFREG | 0o644, ino=3 + i), i + 1

    async def readdir(self, ino: int, offset: int, fh: int, plus: bool) -> AsyncIterator[Any]:
        async for page in super().readdir(ino, offset, fh, plus):
            if page[0][2] > 600 and not self.go:
                self.waiting = True
                try:
                    while not self.go:
                        await asyncio.sleep(0.01)
                except asyncio.CancelledError:
                    self.cancelled += 1
                    raise
                finally:
                    self.waiting = False
            yield page


def list_all(path: str) -> list[str]:
    return sorted(os.listdir(path))


class Listed(Paged):
    """Paged's names, from a synchronous readdir's list."""

    def readdir(self, ino: int, offset: int, fh: int, plus: bool) -> Any:  # type: ignore[override]
        return [self._entry(i) for i in range(offset, N)]


def entries_per_read(path: str, size: int = 4096) -> list[int]:
    """How many entries each getdents64(2) of directory ``path`` returned, reading ``size``
    bytes at a time: on a FUSE mount each is one READDIR/READDIRPLUS request for that many
    bytes (Linux sizes the request by the reader's buffer, a page at least), so the list says
    how full each reply was."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.getdents64.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
    libc.getdents64.restype = ctypes.c_ssize_t
    buf = ctypes.create_string_buffer(size)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    counts = []
    try:
        while True:
            n = libc.getdents64(fd, buf, size)
            if n < 0:
                raise OSError(ctypes.get_errno(), f"getdents64 of {path}")
            if n == 0:
                return counts
            at = k = 0
            while at < n:  # struct linux_dirent64: d_ino, d_off, then d_reclen (u16)
                at += int.from_bytes(buf.raw[at + 16:at + 18], "little")
                k += 1
            counts.append(k)
    finally:
        os.close(fd)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("pages", [False, True])
def test_streamed_listing(mount_ops: Any, mnt: str, pages: bool) -> None:
    ops = Paged(pages=pages)
    s = mount_ops(ops, config=Config(readdirplus="off"))
    names = list_all(mnt)
    assert names == sorted(f"n{i}" for i in range(N))
    assert ops.finished == 1
    assert s._listings.requests >= 3  # streamed across requests


class Small(Paged):
    """300 of Paged's names as one list (less than a batch, more than a 4 KiB request holds),
    from a synchronous or an ``async def`` readdir."""

    def __init__(self, is_async: bool) -> None:
        super().__init__()
        self.is_async = is_async
        self.calls = 0

    def readdir(self, ino: int, offset: int, fh: int, plus: bool) -> Any:  # type: ignore[override]
        self.calls += 1
        entries = [self._entry(i) for i in range(offset, 300)]
        if not self.is_async:
            return entries

        async def later() -> list[Any]:
            await asyncio.sleep(0)
            return entries
        return later()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("readdirplus", ["off", "always"])
@pytest.mark.parametrize("is_async", [False, True], ids=["def", "async"])
def test_small_list_across_requests(mount_ops: Any, mnt: str, readdirplus: str,
                                    is_async: bool) -> None:
    """A listing's first batch that the first request cannot hold (Listings._first's kept
    rest), whether served at the call or once the handler's coroutine has finished: every
    entry once, in order, across requests, from the rest kept (readdir called once)."""
    ops = Small(is_async)
    mount_ops(ops, config=Config(readdirplus=readdirplus))
    counts = entries_per_read(mnt)
    assert sum(counts) == 300 and len(counts) > 1, counts
    assert ops.calls == 1
    assert os.listdir(mnt) == [f"n{i}" for i in range(300)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("readdirplus", ["off", "always"])
def test_every_reply_but_the_last_is_full(tmp_path: Any, readdirplus: str) -> None:
    """An async listing fetched in pages fills each kernel buffer as the same listing from a
    synchronous readdir does: a request whose buffer the fetched entries did not fill awaits
    the next page instead of going out part-empty (one more request every batch)."""
    seen = {}
    for ops in (Listed(), Paged(pages=True)):
        mnt = tmp_path / type(ops).__name__
        mnt.mkdir()
        with testing.mounted(ops, str(mnt), config=Config(readdirplus=readdirplus)):
            seen[type(ops).__name__] = entries_per_read(str(mnt))
    assert sum(seen["Listed"]) == N
    assert len(seen["Listed"]) > 2 * N // READDIR_BATCH, seen  # batches span requests
    assert seen["Paged"] == seen["Listed"], seen


@pytest.mark.timeout(60)
def test_pulled_ahead_is_bounded_and_finally_runs_on_early_close(mount_ops: Any,
                                                                 mnt: str) -> None:
    ops = Paged()
    mount_ops(ops)
    code = ("import os, sys\n"
            "it = os.scandir(sys.argv[1])\n"
            "[next(it) for _ in range(50)]\n"
            "it.close()\n")
    subprocess.run([sys.executable, "-c", code, mnt], check=True, timeout=30)
    assert ops.pulled <= 50 + 2 * READDIR_BATCH  # a batch or so ahead, never the directory
    assert wait(lambda: ops.finished == 1)  # releasedir closed the generator: finally ran


def wait(cond: Any, timeout: float = 10) -> bool:
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end and not cond():
        time.sleep(0.01)
    return bool(cond())


@pytest.mark.timeout(60)
@pytest.mark.expect_errors
@pytest.mark.parametrize("fail_at", [1500, READDIR_BATCH])
def test_error_after_some_entries(mount_ops: Any, mnt: str, fail_at: int) -> None:
    """The entries before the error are listed, then the error: raised inside a fetch
    (1500), or as a fetch begins while the request holds the batch before it
    (READDIR_BATCH: the first fetch takes that many, the request's buffer takes more)."""
    ops = Paged(fail_at=fail_at)
    mount_ops(ops)
    code = ("import os, sys\n"
            "n = 0\n"
            "try:\n"
            "    for e in os.scandir(sys.argv[1]):\n"
            "        n += 1\n"
            "except OSError as e:\n"
            "    print(n, e.errno)\n")
    r = subprocess.run([sys.executable, "-c", code, mnt], capture_output=True, text=True,
                       timeout=30)
    got, err = map(int, r.stdout.split())
    assert got == fail_at and err == errno.EREMOTEIO


@pytest.mark.timeout(60)
def test_positional_restart(mount_ops: Any, mnt: str) -> None:
    """Names without offsets: a listing read in two processes' steps with a seek back
    (rewinddir) starts over and skips what the offset says."""
    ops = Paged(offsets=False)
    mount_ops(ops, config=Config(readdirplus="off"))
    assert list_all(mnt) == sorted(f"n{i}" for i in range(N))
    code = ("import ctypes, os, sys\n"
            "libc = ctypes.CDLL(None)\n"
            "libc.opendir.restype = ctypes.c_void_p\n"
            "libc.readdir.restype = ctypes.c_void_p\n"
            "libc.telldir.restype = ctypes.c_long\n"
            "for f in ('readdir', 'telldir', 'seekdir', 'closedir'):\n"
            "    getattr(libc, f).argtypes = [ctypes.c_void_p] + ([ctypes.c_long] "
            "if f == 'seekdir' else [])\n"
            "d = libc.opendir(sys.argv[1].encode())\n"
            "for _ in range(700):\n"
            "    libc.readdir(d)\n"
            "pos = libc.telldir(d)\n"
            "libc.readdir(d)\n"
            "libc.seekdir(d, pos)\n"
            "n = 0\n"
            "while libc.readdir(d):\n"
            "    n += 1\n"
            "libc.closedir(d)\n"
            "print(n)\n")
    r = subprocess.run([sys.executable, "-c", code, mnt], capture_output=True, text=True,
                       timeout=30)
    assert int(r.stdout) == N - 700, r.stdout
    assert ops.finished >= 3  # the seek restarted the generator, which skipped 700


#: reads one buffer of 128 KiB of a directory: a READDIRPLUS request takes more entries than
#: Stalled's first fetch (600)
_READER = ("import ctypes, os, sys\n"
           "buf = ctypes.create_string_buffer(1 << 17)\n"
           "fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)\n"
           "ctypes.CDLL(None).getdents64(fd, buf, len(buf))\n")


@pytest.mark.timeout(60)
def test_interrupt_while_a_part_filled_request_awaits_a_fetch(mount_ops: Any, mnt: str) -> None:
    """A READDIRPLUS request holding entries (their lookups counted) waits for the next fetch
    and its caller is killed: the fetch is cancelled, the request answered EINTR, and the
    lookups of the entries that never reached the kernel are taken back; the next listing
    starts over and is whole."""
    ops = Stalled()
    s = mount_ops(ops, config=Config(readdirplus="always"))
    reader = subprocess.Popen([sys.executable, "-c", _READER, mnt])
    assert wait(lambda: ops.waiting)
    assert s.lookups_held()[1] > 0, s.lookups_held()  # the entries in the request's buffer
    reader.send_signal(signal.SIGINT)
    assert reader.wait(10) == -signal.SIGINT
    assert wait(lambda: ops.cancelled == 1)
    assert wait(lambda: s.lookups_held() == (0, 0)), s.lookups_held()
    ops.go = True
    assert list_all(mnt) == sorted(f"n{i}" for i in range(N))


@pytest.mark.timeout(60)
def test_session_end_while_a_part_filled_request_awaits_a_fetch(mnt: str) -> None:
    """The session ends (unmounted) while a READDIRPLUS request holding entries, and so
    counted lookups, waits for the next fetch: the fetch is cancelled, the request answered
    once (the reader returns, no error logged), nothing is left pending, and the lookups of
    the entries that never reached the kernel are taken back while the session still exists
    (under ``make test-sanitize``, a use of the ended session there is reported)."""
    ops = Stalled()
    cm = testing.mounted(ops, mnt, config=Config(readdirplus="always"))
    s = cm.__enter__()
    reader = None
    held: list[tuple[bool, int]] = []  # (the C session still there, lookups) once answered
    try:
        reader = subprocess.Popen([sys.executable, "-c", _READER, mnt],
                                  stderr=subprocess.DEVNULL)
        assert wait(lambda: ops.waiting)
        assert s.lookups_held()[1] > 0, s.lookups_held()  # the entries in the request's buffer
        end = s._bridge.close

        def close(*args: Any, **kwargs: Any) -> Any:
            r = end(*args, **kwargs)  # the bridge has answered what was pending
            held.append((s._c != ffi.NULL, s.lookups_held()[1]))
            return r

        s._bridge.close = close
    finally:
        cm.__exit__(None, None, None)
    assert reader is not None
    reader.wait(10)  # answered: the getdents64 returned (an error or nothing)
    assert ops.cancelled == 1
    assert not s._bridge._pending
    assert held == [(True, 0)], held
    assert not os.path.ismount(mnt)
