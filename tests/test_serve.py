"""Serving inside the caller's own event loop (pyfuse.lowlevel.serve/serving) under asyncio
and trio, with the requests read by libfuse's threads or by the loop itself (on_loop=True), on
real mounts: handlers run on the caller's loop (loop-bound objects work), the session sends
notifications from inside the block, an interrupt cancels a handler's task, leaving the block
or cancelling serve() unmounts and answers what is pending, and an async readdir may be an
async generator streamed across requests."""
from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import functools
import os
import stat
import subprocess
import threading
from typing import Any, AsyncIterator, Optional

import pytest

import pyfuse.lowlevel as ll
from pyfuse import Attr, Config, DirEntry, FileInfo, FuseError
from pyfuse.mounts import fuse_device

trio = pytest.importorskip("trio")

NO_CACHE = Config(entry_timeout=0, attr_timeout=0, negative_timeout=0)
ROOT = Attr(mode=stat.S_IFDIR | 0o755, ino=1, nlink=2)


class Remote(ll.Operations):
    """A directory of ``n`` files whose handlers use an object bound to the serving loop
    (``self.limiter``, made by the test inside that loop) and record the thread they ran on."""

    def __init__(self, n: int = 3, hang: bool = False) -> None:
        self.n, self.hang = n, hang
        self.limiter: Any = None
        self.threads: set[int] = set()
        self.sync_threads: set[int] = set()  # where the synchronous open ran
        self.contents = {2 + i: b"v1 of f%d\n" % i for i in range(n)}
        self.cancelled = 0
        self.events: list[tuple[str, int]] = []  # (init|destroy, thread)

    async def init(self) -> None:
        await _sleep0()  # a real suspension: it needs the serving loop
        self.events.append(("init", threading.get_ident()))

    async def destroy(self) -> None:
        await _sleep0()
        self.events.append(("destroy", threading.get_ident()))

    def _attr(self, ino: int) -> Attr:
        if ino == 1:
            return ROOT
        if ino in self.contents:
            return Attr(mode=stat.S_IFREG | 0o644, ino=ino, size=len(self.contents[ino]))
        raise FuseError(errno.ENOENT)

    async def lookup(self, parent: int, name: str) -> Attr:
        async with self.limiter:
            self.threads.add(threading.get_ident())
            if parent == 1 and name[:1] == "f" and name[1:].isdigit():
                return self._attr(2 + int(name[1:]))
            raise FuseError(errno.ENOENT)

    async def getattr(self, ino: int, fh: Optional[int]) -> Attr:
        return self._attr(ino)

    def open(self, ino: int, flags: int) -> FileInfo:
        self.sync_threads.add(threading.get_ident())
        return FileInfo(direct_io=True)

    async def read(self, ino: int, size: int, offset: int, fh: int) -> bytes:
        async with self.limiter:
            self.threads.add(threading.get_ident())
        if self.hang:
            try:
                await _forever()
            finally:
                self.cancelled += 1
        return self.contents[ino][offset:offset + size]

    async def readdir(self, ino: int, offset: int, fh: int, plus: bool
                      ) -> AsyncIterator[DirEntry]:
        for i, child in enumerate(sorted(self.contents)):
            if i >= offset:
                yield DirEntry(f"f{child - 2}", self._attr(child), i + 1)


async def _forever() -> None:
    if _is_trio():
        await trio.sleep_forever()
    else:
        await asyncio.Event().wait()


async def _sleep0() -> None:
    await (trio.sleep(0) if _is_trio() else asyncio.sleep(0))


def _is_trio() -> bool:
    try:
        trio.lowlevel.current_trio_token()
        return True
    except RuntimeError:
        return False


async def wait_until(cond: Any) -> None:
    for _ in range(1000):
        if cond():
            return
        await (trio.sleep(0.01) if _is_trio() else asyncio.sleep(0.01))
    raise AssertionError("timed out")


#: (library, on_loop): each scenario runs under asyncio and trio, with the requests read by
#: libfuse's threads and by the loop itself.
MODES = [pytest.param(lib, on_loop, id=f"{lib}-{'on_loop' if on_loop else 'threads'}")
         for lib in ("asyncio", "trio") for on_loop in (False, True)]


def run_in(lib: str, fn: Any, *args: Any) -> Any:
    return asyncio.run(fn(*args)) if lib == "asyncio" else trio.run(fn, *args)


async def to_thread(fn: Any, *args: Any) -> Any:
    if _is_trio():
        return await trio.to_thread.run_sync(fn, *args)
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


async def scenario(mnt: str, on_loop: bool) -> None:
    """The same checks under either library."""
    ops = Remote()
    ops.limiter = trio.Semaphore(2) if _is_trio() else asyncio.Semaphore(2)
    me = threading.get_ident()
    async with ll.serving(ops, mnt, config=NO_CACHE, on_loop=on_loop) as session:
        assert fuse_device(mnt) is not None
        names = await to_thread(os.listdir, mnt)
        assert sorted(names) == ["f0", "f1", "f2"]
        with pytest.raises(FileNotFoundError):  # a handler's FuseError: the caller's errno
            await to_thread(os.stat, os.path.join(mnt, "nope"))

        def read(name: str) -> bytes:
            with open(os.path.join(mnt, name), "rb") as f:
                return f.read()

        assert await to_thread(read, "f1") == b"v1 of f1\n"
        assert ops.threads == {me}  # the caller's loop ran them
        # the synchronous handler: on the loop with on_loop, else on libfuse's threads
        assert (ops.sync_threads == {me}) == on_loop and ops.sync_threads
        ops.contents[3] = b"version 2 of f1\n"
        session.invalidate_inode(3)  # from the loop's thread: sent once nothing waits on it
        assert await to_thread(read, "f1") == b"version 2 of f1\n"
    assert fuse_device(mnt) is None  # leaving the block unmounted
    # the async init and destroy ran (on the loop: they suspend), before and after the rest
    assert ops.events == [("init", me), ("destroy", me)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lib,on_loop", MODES)
def test_serving(mnt: str, lib: str, on_loop: bool) -> None:
    run_in(lib, scenario, mnt, on_loop)


async def interrupt_scenario(mnt: str, on_loop: bool) -> None:
    """A read that waits forever, interrupted by the reader's SIGINT: its task is cancelled,
    the reader gets EINTR, the mount goes on serving."""
    ops = Remote(hang=True)
    ops.limiter = trio.Semaphore(2) if _is_trio() else asyncio.Semaphore(2)
    async with ll.serving(ops, mnt, config=NO_CACHE, on_loop=on_loop):
        r = await to_thread(lambda: subprocess.run(
            ["timeout", "-s", "INT", "1", "cat", os.path.join(mnt, "f0")],
            capture_output=True, timeout=20))
        assert r.returncode != 0
        await wait_until(lambda: ops.cancelled)
        assert ops.cancelled == 1
        assert sorted(await to_thread(os.listdir, mnt)) == ["f0", "f1", "f2"]
    assert fuse_device(mnt) is None


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lib,on_loop", MODES)
def test_interrupt(mnt: str, lib: str, on_loop: bool) -> None:
    run_in(lib, interrupt_scenario, mnt, on_loop)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("on_loop", [False, True], ids=["threads", "on_loop"])
def test_serving_a_bad_mountpoint_raises(tmp_path: Any, on_loop: bool) -> None:
    async def enter() -> None:
        async with ll.serving(Remote(), str(tmp_path / "missing"), on_loop=on_loop):
            raise AssertionError("mounted")

    with pytest.raises(FileNotFoundError, match="mount point does not exist"):
        asyncio.run(enter())


async def cancel_scenario(mnt: str, on_loop: bool) -> int:
    """serve() in a task, a read pending forever, then the task cancelled: unmounted, the
    reader answered, the handler cancelled."""
    ops = Remote(hang=True)
    ops.limiter = trio.Semaphore(2) if _is_trio() else asyncio.Semaphore(2)
    reader: Optional[subprocess.Popen[bytes]] = None

    async def start_reader() -> None:
        nonlocal reader
        await wait_until(lambda: fuse_device(mnt) is not None)
        reader = subprocess.Popen(["cat", os.path.join(mnt, "f0")], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        await wait_until(lambda: ops.threads)

    if _is_trio():
        with trio.move_on_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(functools.partial(ll.serve, ops, mnt, on_loop=on_loop))
                await start_reader()
                nursery.cancel_scope.cancel()
    else:
        task = asyncio.ensure_future(ll.serve(ops, mnt, on_loop=on_loop))
        await start_reader()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert fuse_device(mnt) is None
    assert reader is not None
    rc = await to_thread(reader.wait, 10)
    assert ops.cancelled == 1
    return int(rc)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lib,on_loop", MODES)
def test_serve_cancelled(mnt: str, lib: str, on_loop: bool) -> None:
    assert run_in(lib, cancel_scenario, mnt, on_loop) != 0


def test_serving_outside_a_loop_is_an_error(mnt: str) -> None:
    async def enter() -> None:
        await ll.serving(Remote(), mnt).__aenter__()

    coro = enter()
    with pytest.raises(RuntimeError, match="asyncio event loop or trio run"):
        coro.send(None)
    coro.close()


class Slow(Remote):
    """Remote whose reads take 0.3 s (or, ``forever``, until cancelled), counting how many
    are in progress at once (``most``)."""

    def __init__(self, forever: bool = False) -> None:
        super().__init__()
        self.forever = forever
        self.running = self.most = 0

    async def read(self, ino: int, size: int, offset: int, fh: int) -> bytes:
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            if self.forever:
                await _forever()
            await (trio.sleep(0.3) if _is_trio() else asyncio.sleep(0.3))
        finally:
            self.running -= 1
            self.cancelled += self.forever
        return self.contents[ino][offset:offset + size]


async def max_tasks_scenario(mnt: str, max_tasks: Optional[int]) -> int:
    """Three reads at once from three client threads; returns how many the filesystem had in
    progress at most."""
    ops = Slow()
    ops.limiter = trio.Semaphore(3) if _is_trio() else asyncio.Semaphore(3)
    names = ["f0", "f1", "f2"]

    def read_all() -> list[bytes]:
        def read(name: str) -> bytes:
            with open(os.path.join(mnt, name), "rb") as f:
                return f.read()
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            return list(pool.map(read, names))

    async with ll.serving(ops, mnt, config=NO_CACHE, on_loop=True, max_tasks=max_tasks):
        assert await to_thread(read_all) == [ops.contents[2 + i] for i in range(3)]
    return ops.most


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lib", ["asyncio", "trio"])
@pytest.mark.parametrize("max_tasks", [1, None])
def test_max_tasks(mnt: str, lib: str, max_tasks: Optional[int]) -> None:
    most = run_in(lib, max_tasks_scenario, mnt, max_tasks)
    if max_tasks == 1:
        assert most == 1  # one request at a time: the others waited unread
    else:
        assert most >= 2


async def stuck_scenario(mnt: str) -> int:
    """max_tasks=1 and a read that never ends: leaving the block still unmounts (the loop
    reads again to see the end) and cancels it."""
    ops = Slow(forever=True)
    ops.limiter = trio.Semaphore(2) if _is_trio() else asyncio.Semaphore(2)
    async with ll.serving(ops, mnt, config=NO_CACHE, on_loop=True, max_tasks=1):
        reader = subprocess.Popen(["cat", os.path.join(mnt, "f0")], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        await wait_until(lambda: ops.running)
    assert fuse_device(mnt) is None
    rc = await to_thread(reader.wait, 10)
    assert ops.cancelled == 1
    return int(rc)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lib", ["asyncio", "trio"])
def test_max_tasks_reached_still_ends(mnt: str, lib: str) -> None:
    assert run_in(lib, stuck_scenario, mnt) != 0


def test_max_tasks_is_checked(mnt: str) -> None:
    with pytest.raises(ValueError, match="needs on_loop=True"):
        ll.serving(Remote(), mnt, max_tasks=1)
    with pytest.raises(ValueError, match="an int >= 1"):
        ll.serving(Remote(), mnt, on_loop=True, max_tasks=0)
