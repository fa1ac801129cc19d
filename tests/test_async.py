"""Every request answered exactly once, whatever happens between its arrival and its end, on
real mounts: an INTERRUPT before the task's first step (the event loop held up), during its
await, after its reply; the session ending with requests pending; a stress run of many
interrupted requests against a loop that is sometimes blocked. No caller is left waiting
(/sys/fs/fuse/connections/N/waiting back to 0) and no coroutine is left "never awaited"."""
from __future__ import annotations

import asyncio
import errno
import gc
import os
import random
import signal
import stat
import subprocess
import sys
import threading
import time
from typing import Any, Optional

import pytest
from test_lowlevel import wait_for  # noqa: E402

import pyfuse
import pyfuse.lowlevel as ll
from pyfuse import Attr, Config, FileInfo, FuseError
from pyfuse._core.context import CURRENT
from pyfuse.mounts import FUSECTL, _ensure_fusectl

NO_CACHE = Config(entry_timeout=0, attr_timeout=0, negative_timeout=0)
ROOT = Attr(mode=stat.S_IFDIR | 0o755, ino=1, nlink=2)


def waiting(session: Any) -> int:
    """Requests of this mount's connection whose callers wait for an answer."""
    _ensure_fusectl()
    with open(f"{FUSECTL}/{session.connection.split(':')[1]}/waiting") as f:
        return int(f.read())


def unawaited(recwarn: Any) -> list[str]:
    gc.collect()
    return [str(w.message) for w in recwarn if "never awaited" in str(w.message)]


class Slow(ll.Operations):
    """Files ``f0``..``f{n-1}`` (inodes 2..); every handler is ``async def``; a read of a file
    waits ``delay`` seconds (cancellable), a lookup ``lookup_delay``."""

    def __init__(self, n: int = 4, delay: float = 3600.0, lookup_delay: float = 0.0) -> None:
        self.n, self.delay, self.lookup_delay = n, delay, lookup_delay
        self.cancelled = 0
        self.keys: list[int] = []
        self.lock = threading.Lock()

    def _attr(self, ino: int) -> Attr:
        if ino == 1:
            return ROOT
        if 2 <= ino < 2 + self.n:
            return Attr(mode=stat.S_IFREG | 0o644, ino=ino, size=4096)
        raise FuseError(errno.ENOENT)

    async def lookup(self, parent: int, name: str) -> Attr:
        p = CURRENT.get()
        assert p is not None
        self.keys.append(p.key)
        if self.lookup_delay:
            await asyncio.sleep(self.lookup_delay)
        if parent == 1 and name.startswith("f") and name[1:].isdigit():
            return self._attr(2 + int(name[1:]))
        raise FuseError(errno.ENOENT)

    async def getattr(self, ino: int, fh: Optional[int]) -> Attr:
        return self._attr(ino)

    def open(self, ino: int, flags: int) -> FileInfo:
        return FileInfo(direct_io=True)  # every read(2) reaches the filesystem

    async def read(self, ino: int, size: int, offset: int, fh: int) -> bytes:
        try:
            await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            with self.lock:
                self.cancelled += 1
            raise
        return b"x" * min(size, 4096 - offset) if offset < 4096 else b""


def block_loop(session: Any) -> threading.Event:
    """Hold the session's event loop (a blocking call on it) until the returned event is set."""
    gate, held = threading.Event(), threading.Event()

    def hold() -> None:
        held.set()
        gate.wait(30)

    session.event_loop.call_soon_threadsafe(hold)
    assert held.wait(10)
    return gate


@pytest.mark.timeout(60)
def test_interrupt_before_the_first_step(mount_ops: Any, mnt: str, recwarn: Any) -> None:
    """The issue's case: the event loop is blocked; a lookup arrives and its caller is killed
    by a signal before the task ever runs. The request is answered (EINTR) when the loop
    comes back, the caller ends, and the coroutine is closed, not left unawaited."""
    ops = Slow()
    s = mount_ops(ops, config=NO_CACHE)
    gate = block_loop(s)
    try:
        stat_ = subprocess.Popen(["stat", os.path.join(mnt, "f1")], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        # the request is handed over (pending, not started) before the signal
        assert wait_for(lambda: any(p.op == "lookup" for p in list(s._bridge._pending.values())))
        stat_.send_signal(signal.SIGINT)
        assert wait_for(lambda: any(p.interrupted for p in list(s._bridge._pending.values())))
        assert stat_.poll() is None  # the caller waits for the answer (state D)
    finally:
        gate.set()
    assert stat_.wait(10) == -signal.SIGINT
    assert wait_for(lambda: not s._bridge._pending and waiting(s) == 0), waiting(s)
    assert ops.keys == []  # the coroutine never ran ...
    assert unawaited(recwarn) == []  # ... and was closed
    assert os.stat(os.path.join(mnt, "f1")).st_size == 4096  # still serving


@pytest.mark.timeout(60)
def test_interrupt_during_the_await(mount_ops: Any, mnt: str, recwarn: Any) -> None:
    ops = Slow()
    s = mount_ops(ops, config=NO_CACHE)
    cat = subprocess.Popen(["cat", os.path.join(mnt, "f0")], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    assert wait_for(lambda: any(p.op == "read" and p.started
                                for p in list(s._bridge._pending.values())))
    cat.send_signal(signal.SIGINT)
    assert cat.wait(10) == -signal.SIGINT
    assert wait_for(lambda: ops.cancelled == 1 and not s._bridge._pending and waiting(s) == 0)
    assert unawaited(recwarn) == []


@pytest.mark.timeout(60)
def test_interrupt_after_the_reply(mount_ops: Any, mnt: str, recwarn: Any) -> None:
    """An INTERRUPT that comes after the reply (the kernel's and pyfuse's race) finds nothing
    to cancel and sends nothing: the shim's entry point is called with the answered
    request's key, as libfuse would."""
    from pyfuse.lowlevel._callbacks import pyfuse_ll_cb_interrupt

    ops = Slow()
    s = mount_ops(ops, config=NO_CACHE)
    assert os.stat(os.path.join(mnt, "f2")).st_size == 4096
    assert ops.keys and not s._bridge._pending
    pyfuse_ll_cb_interrupt(s._handle, ops.keys[-1])
    assert os.stat(os.path.join(mnt, "f2")).st_size == 4096
    assert waiting(s) == 0 and unawaited(recwarn) == []


@pytest.mark.timeout(60)
def test_session_end_answers_pending(mnt: str, recwarn: Any) -> None:
    """Unmounting with requests pending (started, and not yet started: the loop is held):
    each is answered once, every caller returns, and the coroutines are cancelled or
    closed."""
    ops = Slow()
    cm = pyfuse.testing.mounted(ops, mnt, config=NO_CACHE)
    s = cm.__enter__()
    procs = []
    try:
        procs = [subprocess.Popen(["cat", os.path.join(mnt, f"f{i}")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for i in range(3)]
        assert wait_for(lambda: sum(p.started for p in list(s._bridge._pending.values())) == 3)
        gate = block_loop(s)
        procs.append(subprocess.Popen(["stat", os.path.join(mnt, "f3")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        assert wait_for(lambda: len(s._bridge._pending) == 4)
        gate.set()
    finally:
        cm.__exit__(None, None, None)
    for p in procs:
        p.wait(10)
    assert not s._bridge._pending
    assert unawaited(recwarn) == []


async def _slow_lookup(delay: float) -> None:
    await asyncio.sleep(delay)


class Mixed(Slow):
    """Slow with random delays, and a file whose read blocks the event loop a while."""

    def __init__(self) -> None:
        super().__init__(n=16, delay=0.0)
        self.rng = random.Random(7)

    async def lookup(self, parent: int, name: str) -> Attr:
        await asyncio.sleep(self.rng.random() * 0.02)
        return await super().lookup(parent, name)

    async def read(self, ino: int, size: int, offset: int, fh: int) -> bytes:
        if ino == 2:
            time.sleep(0.05 + self.rng.random() * 0.1)  # blocks the loop (a bad handler)
        try:
            await asyncio.sleep(self.rng.random() * 0.05)
        except asyncio.CancelledError:
            with self.lock:
                self.cancelled += 1
            raise
        return b"x" * min(size, 4096 - offset) if offset < 4096 else b""


_CLIENT = r"""
import os, random, signal, sys, time
mnt, n, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
def child(seed):
    signal.signal(signal.SIGUSR1, lambda *a: None)  # non-fatal: EINTR, retried by Python
    rng = random.Random(seed)
    while True:
        p = os.path.join(mnt, "f%d" % rng.randrange(20))  # f16..f19 do not exist
        try:
            if rng.random() < 0.5:
                os.stat(p)
            else:
                with open(p, "rb") as f:
                    f.read()
        except OSError:
            pass
kids = []
end = time.monotonic() + seconds
rng = random.Random(1)
killed = 0
while time.monotonic() < end:
    while len(kids) < n:
        pid = os.fork()
        if pid == 0:
            try:
                child(rng.random())
            finally:
                os._exit(0)
        kids.append(pid)
    time.sleep(rng.random() * 0.02)
    pid = kids[rng.randrange(len(kids))]
    os.kill(pid, signal.SIGUSR1)
    if rng.random() < 0.5:
        os.kill(pid, rng.choice([signal.SIGINT, signal.SIGKILL]))
        os.waitpid(pid, 0)
        kids.remove(pid)
        killed += 1
for pid in kids:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
print(killed)
"""


@pytest.mark.timeout(120)
def test_interrupt_stress_inode_api(mount_ops: Any, mnt: str, recwarn: Any) -> None:
    """Many interrupted requests (signals to clients mid-request, fatal and not) against an
    event loop that is sometimes blocked: at the end no caller waits, nothing is pending."""
    ops = Mixed()
    s = mount_ops(ops, config=NO_CACHE)
    stop = threading.Event()

    def blocker() -> None:  # holds the loop now and then, as a bad handler would
        rng = random.Random(3)
        while not stop.wait(rng.random() * 0.2):
            s.event_loop.call_soon_threadsafe(time.sleep, rng.random() * 0.1)

    t = threading.Thread(target=blocker, daemon=True)
    t.start()
    try:
        r = subprocess.run([sys.executable, "-c", _CLIENT, mnt, "12", "6"], capture_output=True,
                           text=True, timeout=60)
    finally:
        stop.set()
        t.join()
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) > 10  # clients killed mid-run (each waited for: a killed caller
    # still waits for its answer)
    assert wait_for(lambda: not s._bridge._pending and waiting(s) == 0, 15), \
        (len(s._bridge._pending), waiting(s))
    assert unawaited(recwarn) == []
    assert os.stat(os.path.join(mnt, "f3")).st_size == 4096


class SlowPath(pyfuse.Operations):
    """The path API: files whose read polls for an interrupt (a sync handler's way)."""

    def __init__(self) -> None:
        self.seen = 0

    def getattr(self, path: str, fh: Optional[int]) -> Attr:
        if path == "/":
            return ROOT
        if path[1:2] == "f" and path[2:].isdigit() and int(path[2:]) < 16:
            time.sleep(0.002)
            return Attr(mode=stat.S_IFREG | 0o644, size=4096)
        raise FuseError(errno.ENOENT)

    def open(self, path: str, flags: int) -> FileInfo:
        return FileInfo(direct_io=True)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        ctx = pyfuse.context()
        for _ in range(20):
            if ctx.interrupted:
                self.seen += 1
                raise FuseError(errno.EINTR)
            time.sleep(0.005)
        return b"x" * min(size, 4096 - offset) if offset < 4096 else b""


@pytest.mark.timeout(120)
def test_interrupt_stress_path_api(mount_ops: Any, mnt: str) -> None:
    """The path API with ``intr``: libfuse signals the handler's thread (SIGUSR1) on each
    interrupt, which must not kill this process (the shim's handler), and the handler sees
    ``context().interrupted``."""
    ops = SlowPath()
    s = mount_ops(ops, config=NO_CACHE, options={"intr": True})
    r = subprocess.run([sys.executable, "-c", _CLIENT, mnt, "12", "4"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert wait_for(lambda: waiting(s) == 0, 15), waiting(s)
    assert ops.seen > 0
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL  # Python's view: untouched


class Blocking(pyfuse.Operations):
    """The path API: ``/slow`` reads poll for an interrupt (up to 30 s); ``/hold`` reads block
    the serving thread for ``hold`` seconds without looking; ``/quick`` answers at once."""

    def __init__(self) -> None:
        self.seen_interrupt = threading.Event()
        self.started: dict[str, threading.Event] = {"slow": threading.Event(),
                                                     "hold": threading.Event()}
        self.reads: list[str] = []
        self.opened: list[str] = []
        self.hold = 2.0

    def getattr(self, path: str, fh: Optional[int]) -> Attr:
        if path == "/":
            return ROOT
        if path in ("/slow", "/hold", "/quick"):
            return Attr(mode=stat.S_IFREG | 0o644, size=4096)
        raise FuseError(errno.ENOENT)

    def open(self, path: str, flags: int) -> FileInfo:
        self.opened.append(path[1:])
        return FileInfo(direct_io=True)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        name = path[1:]
        self.reads.append(name)
        if name in self.started:
            self.started[name].set()
        if name == "slow":
            ctx = pyfuse.context()
            for _ in range(3000):
                if ctx.interrupted:
                    self.seen_interrupt.set()
                    raise FuseError(errno.EINTR)
                time.sleep(0.01)
        elif name == "hold":
            time.sleep(self.hold)
        return b"x" * min(size, 4096 - offset) if offset < 4096 else b""


def _reader(path: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import os,sys\n"
                             "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
                             "print('opened', flush=True)\n"
                             "os.read(fd, 4096)\n", path],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


@pytest.mark.timeout(60)
def test_path_api_interrupt_orderings(mount_ops: Any, mnt: str, tmp_path: Any) -> None:
    """The path API (its replies are libfuse's): an INTERRUPT during a handler (it sees
    ``context().interrupted`` and answers EINTR); one that comes while the request still
    waits in the kernel's queue (a single-threaded loop held by another request: the kernel
    drops the request, the handler never runs); one after the reply (nothing happens)."""
    ops = Blocking()
    s = mount_ops(ops, config=NO_CACHE, options={"intr": True})
    # during (the multi-threaded loop: another thread reads the INTERRUPT)
    p = _reader(os.path.join(mnt, "slow"))
    assert ops.started["slow"].wait(10)
    p.send_signal(signal.SIGINT)
    assert p.wait(10) == -signal.SIGINT
    assert ops.seen_interrupt.wait(5)
    # after the reply
    with open(os.path.join(mnt, "quick"), "rb") as f:
        assert len(f.read()) == 4096
    assert wait_for(lambda: waiting(s) == 0)
    # before: on a single-threaded loop /hold keeps the only thread; a /quick read waits in
    # the kernel's queue behind it
    one = Blocking()
    m2 = str(tmp_path / "m2")
    os.mkdir(m2)
    with pyfuse.testing.mounted(one, m2, config=NO_CACHE, threads=False) as s2:
        hold = _reader(os.path.join(m2, "hold"))
        assert one.started["hold"].wait(10)
        quick = _reader(os.path.join(m2, "quick"))
        assert quick.stdout is not None
        time.sleep(0.5)  # its OPEN (then READ) is queued behind /hold's READ
        quick.send_signal(signal.SIGKILL)
        assert quick.wait(5) == -signal.SIGKILL  # gone while /hold still runs
        assert hold.wait(10) == 0
        assert "quick" not in one.opened  # the kernel dropped its OPEN: no handler ran
        with open(os.path.join(m2, "quick"), "rb") as f:
            assert len(f.read()) == 4096
        assert wait_for(lambda: waiting(s2) == 0)


class BadAsync(Slow):
    """An async lookup whose entry the shim refuses (inode number 0)."""

    async def lookup(self, parent_inode: int, name: str) -> Attr:  # type: ignore[override]
        if name == "zero":
            return Attr(mode=stat.S_IFREG | 0o644, ino=0)
        return await super().lookup(parent_inode, name)


@pytest.mark.timeout(60)
@pytest.mark.expect_errors
def test_async_refused_reply_is_answered_once(mount_ops: Any, mnt: str, caplog: Any) -> None:
    """A value the shim refuses from an async handler: EIO (sent by the shim), one log line
    naming it, nothing else sent or logged, and the mount goes on."""
    s = mount_ops(BadAsync(), config=NO_CACHE)
    with pytest.raises(OSError) as ei:
        os.stat(os.path.join(mnt, "zero"))
    assert ei.value.errno == errno.EIO
    def errors() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.levelno >= 40]

    # the shim answers EIO first; the event loop logs once it has let go
    assert wait_for(lambda: not s._bridge._pending and errors())
    time.sleep(0.2)
    assert len(errors()) == 1 and "inode number 0" in errors()[0], errors()
    assert os.stat(os.path.join(mnt, "f1")).st_size == 4096
