"""The inode API (pyfuse.lowlevel) on real mounts: lookup counting against the kernel's
forgets, readdirplus packed and counted in C, async handlers (many slow reads, one thread),
interrupts, kernel cache notifications, and bad return values. The memory example's inode-API
twin also runs the memory, data, fsx and conformance suites (tests/test_memory.py,
tests/conformance)."""
from __future__ import annotations

import asyncio
import errno
import fcntl
import logging
import os
import select
import signal
import stat
import subprocess
import sys
import threading
import time
from typing import Any, Optional

import pytest

import pyfuse
import pyfuse.lowlevel as ll
from pyfuse import Attr, Config, DirEntry, FileInfo, FuseError
from pyfuse.examples.latency import Latency
from pyfuse.examples.memory_ll import MemoryLL
from pyfuse.lowlevel._replies import ENTRY_STRUCT


def drop_caches() -> None:
    """Make the kernel forget every inode it does not use (FORGET/BATCH_FORGET)."""
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2")


def wait_for(cond: Any, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return bool(cond())


class Counting(MemoryLL):
    """MemoryLL counting its lookup calls and the forgets it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.lookup_calls = 0
        self.forgotten = 0
        self.forgotten_lock = threading.Lock()

    def lookup(self, parent: int, name: str) -> Attr:
        self.lookup_calls += 1
        return super().lookup(parent, name)

    def forget(self, ino: int, nlookup: int) -> None:
        with self.forgotten_lock:  # forgets of one drop_caches come on several workers
            self.forgotten += nlookup
        super().forget(ino, nlookup)

    def statfs(self, ino: int) -> pyfuse.StatVFS:
        """Waits for ``gate`` (when set up by a test) once it said it is in (``entered``)."""
        gate = getattr(self, "gate", None)
        if gate is not None:
            self.entered.set()
            gate.wait(20)
        return super().statfs(ino)


@pytest.mark.timeout(60)
def test_lookup_counts_go_back_to_zero(mount_ops: Any, mnt: str) -> None:
    ops = Counting()
    # one worker: busy in a statfs below, it lets the kernel queue the forgets (BATCH_FORGET)
    s = mount_ops(ops, config=Config(readdirplus="always"), threads=False)
    d = os.path.join(mnt, "d")
    os.mkdir(d)
    for i in range(300):
        with open(os.path.join(d, f"f{i:03d}"), "w") as f:
            f.write("x")
    os.link(os.path.join(d, "f000"), os.path.join(d, "hard"))
    drop_caches()
    assert wait_for(lambda: s.lookups_held() == (0, 0)), s.lookups_held()
    # a listing with attributes: the readdirplus entries are the kernel's lookups, counted in C
    ops.lookup_calls = 0
    # taken before the listing: whatever evicts the inodes after it (this test's drop_caches,
    # or the kernel's own reclaim) forgets them after this point
    forgotten, requests = ops.forgotten, s.forget_requests
    out = subprocess.run([sys.executable, "-c", "import os,sys\n"
                          "for e in os.scandir(sys.argv[1]): os.lstat(e.path)", d],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    inodes, held = s.lookups_held()
    assert ops.lookup_calls <= 3  # "d" itself, and what the kernel may re-check
    assert inodes >= 300 and held >= 301  # "hard" and "f000" are one inode, looked up twice
    hard = os.stat(os.path.join(d, "hard"))
    assert s.lookups(hard.st_ino) >= 2 and hard.st_nlink == 2
    # the kernel forgets them all; the filesystem gets every lookup back, none twice (an
    # over-forget would log an error, which fails this test). The only worker is kept in a
    # statfs meanwhile, so the forgets queue in the kernel, which hands them over in batches
    # (a worker free to read them as they come gets them one at a time)
    ops.gate, ops.entered = threading.Event(), threading.Event()
    busy = threading.Thread(target=os.statvfs, args=(mnt,))
    busy.start()
    try:
        assert ops.entered.wait(10)
        drop_caches()
    finally:
        ops.gate.set()
        busy.join(20)
    # the shim lowers its counts before the batch's one Python call, so wait for both
    assert wait_for(lambda: s.lookups_held() == (0, 0) and ops.forgotten - forgotten >= held), \
        (s.lookups_held(), ops.forgotten - forgotten, held)
    # BATCH_FORGET: many forgets in one call into Python
    assert s.forget_requests - requests < 30, s.forget_requests - requests


@pytest.mark.timeout(60)
def test_unlinked_inode_freed_after_forget(mount_ops: Any, mnt: str) -> None:
    ops = MemoryLL()
    s = mount_ops(ops)
    p = os.path.join(mnt, "f")
    with open(p, "w") as f:
        f.write("data")
        ino = os.fstat(f.fileno()).st_ino
        os.unlink(p)
        assert os.fstat(f.fileno()).st_nlink == 0
        assert ino in ops.inodes  # open: kept
    drop_caches()
    assert wait_for(lambda: ino not in ops.inodes)
    assert s.lookups(ino) == 0


class Hello(ll.Operations):
    """One file, with switches for the error cases."""

    def __init__(self) -> None:
        self.bad = ""
        now = time.time_ns()
        self.root = Attr(mode=stat.S_IFDIR | 0o755, ino=1, nlink=2, mtime_ns=now)
        self.file = Attr(mode=stat.S_IFREG | 0o644, ino=2, size=5, mtime_ns=now)
        self.link = Attr(mode=stat.S_IFLNK | 0o777, ino=3, size=6, mtime_ns=now)

    def lookup(self, parent: int, name: str) -> Any:
        if name == "link":
            return self.link
        if name != "hello":
            raise FuseError(errno.ENOENT)
        if self.bad == "ino0":
            return ll.Entry(Attr(mode=stat.S_IFREG | 0o644, ino=0))
        if self.bad == "type":
            return ll.Entry(Attr(mode=0o644, ino=2))
        if self.bad == "value":
            return 42
        if self.bad == "bytes":  # a packed entry's shape: only pyfuse.compat's sessions' own
            return bytes(ENTRY_STRUCT.size)
        if self.bad == "timeout":
            return ll.Entry(self.file, entry_timeout=-1)
        if self.bad == "nan":
            return ll.Entry(self.file, attr_timeout=float("nan"))
        # a bare Attr is replied by the callback's own inline path: the same checks
        if self.bad == "ino0bare":
            return Attr(mode=stat.S_IFREG | 0o644, ino=0)
        if self.bad == "typebare":
            return Attr(mode=0o644, ino=2)
        if self.bad == "rangebare":
            return Attr(mode=stat.S_IFREG | 0o644, ino=2, uid=-1)
        if self.bad == "uidset":  # a field set later is stored as C stores it: 2**64 - 1
            a = Attr(mode=stat.S_IFREG | 0o644, ino=2)
            a.uid = -1
            return a
        return ll.Entry(self.file, entry_timeout=0, attr_timeout=0)

    def getattr(self, ino: int, fh: Optional[int]) -> Attr:
        if ino == 2 and self.bad == "getattrtype":
            return Attr(mode=0o644, ino=2)
        if ino == 2 and self.bad == "getattrrange":
            return Attr(mode=stat.S_IFREG | 0o644, ino=2, size=1 << 64)
        if ino == 2 and self.bad == "getattrgid":
            a = Attr(mode=stat.S_IFREG | 0o644, ino=2)
            a.gid = 1 << 40
            return a
        if ino == 1:
            return self.root
        if ino == 2:
            return self.file
        if ino == 3:
            return self.link
        raise FuseError(errno.ENOENT)

    def readlink(self, ino: int) -> bytes:
        return b"tar\0et" if self.bad == "nul" else b"target"

    def open(self, ino: int, flags: int) -> FileInfo:
        return FileInfo(direct_io=True)

    async def getxattr(self, ino: int, name: str) -> bytes:
        raise {"user.fnf": FileNotFoundError, "user.perm": PermissionError,
               "user.exists": FileExistsError}.get(name, OSError)(f"{name}: no errno given")

    def listxattr(self, ino: int) -> list[str]:
        raise IsADirectoryError("no errno given")

    async def read(self, ino: int, size: int, offset: int, fh: int) -> bytes:
        if self.bad == "raise":
            raise ValueError("boom")
        await asyncio.sleep(0)
        return b"hello"[offset:offset + size]

    def readdir(self, ino: int, offset: int, fh: int, plus: bool) -> Any:
        if self.bad == "plus0":  # the bad entry after good ones, in the same reply buffer
            return [DirEntry(".", self.root), DirEntry("..", self.root),
                    DirEntry("hello", self.file),
                    DirEntry("bad", Attr(mode=stat.S_IFREG | 0o644, ino=0))]
        return [DirEntry(".", self.root), DirEntry("..", self.root),
                DirEntry("hello", self.file)]


def test_hello(mount_ops: Any, mnt: str) -> None:
    ops = Hello()
    mount_ops(ops)
    assert sorted(os.listdir(mnt)) == ["hello"]
    st = os.stat(os.path.join(mnt, "hello"))
    assert st.st_ino == 2 and st.st_size == 5
    with open(os.path.join(mnt, "hello"), "rb") as f:
        assert f.read() == b"hello"
    with pytest.raises(FileNotFoundError):
        os.stat(os.path.join(mnt, "nope"))


def test_oserror_subclass_without_errno(mount_ops: Any, mnt: str) -> None:
    """The inode API, sync and async: the class of an OSError raised without an errno gives
    the errno (nothing logged: the log check would fail the test)."""
    mount_ops(Hello())
    p = os.path.join(mnt, "hello")
    for name, want in (("user.fnf", errno.ENOENT), ("user.perm", errno.EACCES),
                       ("user.exists", errno.EEXIST)):
        with pytest.raises(OSError) as ei:
            os.getxattr(p, name)
        assert ei.value.errno == want, name
    with pytest.raises(OSError) as ei:
        os.listxattr(p)
    assert ei.value.errno == errno.EISDIR


@pytest.mark.expect_errors
@pytest.mark.parametrize("bad,message", [
    ("ino0", "inode number 0"), ("type", "no valid file type"),
    ("value", "expected an Entry or Attr"), ("bytes", "expected an Entry or Attr"),
    ("raise", "raised ValueError"),
    ("plus0", "inode number 0"), ("timeout", "entry_timeout=-1: timeouts are finite"),
    ("nan", "attr_timeout=nan"), ("ino0bare", "inode number 0"),
    ("typebare", "no valid file type"),
    ("rangebare", "raised ValueError: Attr.uid=-1 is out of range"),
    ("uidset", "the entry returned has nlink 1, uid 18446744073709551615, gid 0: beyond 32"),
    ("getattrtype", "the attributes returned has mode 0o644"),
    ("getattrrange", "raised ValueError: Attr.size=18446744073709551616 is out of range"),
    ("getattrgid", "the attributes returned has nlink 1, uid 0, gid 1099511627776"),
    ("nul", "readlink returned a target with a NUL byte")])
def test_bad_results_are_eio_and_logged(mount_ops: Any, mnt: str, caplog: Any, bad: str,
                                        message: str) -> None:
    ops = Hello()
    s = mount_ops(ops, config=Config(readdirplus="always", entry_timeout=0, attr_timeout=0))
    p = os.path.join(mnt, "hello")
    if bad in ("raise",):
        with open(p, "rb") as f:
            ops.bad = bad
            with pytest.raises(OSError) as ei:
                f.read()
    elif bad == "plus0":
        ops.bad = bad
        with pytest.raises(OSError) as ei:
            os.listdir(mnt)
        # "hello" went into the failed reply's buffer, counted: the failure took it back
        assert s.lookups(2) == 0 and s.lookups_held() == (0, 0)
    elif bad == "nul":
        link = os.path.join(mnt, "link")
        assert os.readlink(link) == "target"
        ops.bad = bad
        with pytest.raises(OSError) as ei:
            os.readlink(link)
    else:
        ops.bad = bad
        with pytest.raises(OSError) as ei:
            os.stat(p)
    assert ei.value.errno == errno.EIO

    def errors() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]

    # the serving thread logs once the reply is out: the client may see EIO first
    assert wait_for(lambda: errors()), errors()
    assert len(errors()) == 1 and message in errors()[0], errors()
    ops.bad = ""
    assert os.stat(p).st_size == 5  # and the mount goes on


@pytest.mark.timeout(60)
def test_many_slow_reads_one_thread(example: Any, tmp_path: Any) -> None:
    """1,000 reads that each await 0.2 s finish together, on a daemon with a few threads (a
    thread per request would need 1,000; serially they would take 200 s)."""
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    daemon = example("latency", "--delay", "0.2", mountpoint=mnt)
    client = (
        "import os, sys, threading, time\n"
        "m = sys.argv[1]\n"
        "fds = [os.open(os.path.join(m, 'file%d' % (i % 16)), os.O_RDONLY) for i in range(1000)]\n"
        "got = []\n"
        "def rd(fd): got.append(len(os.pread(fd, 4096, 0)))\n"
        "ts = [threading.Thread(target=rd, args=(fd,)) for fd in fds]\n"
        "t = time.monotonic()\n"
        "[x.start() for x in ts]; [x.join() for x in ts]\n"
        "print(time.monotonic() - t, len(got), set(got))\n")
    peak = 0
    proc = subprocess.Popen([sys.executable, "-c", client, mnt], stdout=subprocess.PIPE,
                            text=True)
    while proc.poll() is None:
        with open(f"/proc/{daemon.pid}/status") as f:
            threads = next(int(line.split()[1]) for line in f if line.startswith("Threads:"))
        peak = max(peak, threads)
        time.sleep(0.01)
    elapsed, n, sizes = proc.stdout.read().split(maxsplit=2)  # type: ignore[union-attr]
    assert proc.returncode == 0 and int(n) == 1000 and sizes.strip() == "{4096}"
    assert float(elapsed) < 10, elapsed
    assert peak <= 16, peak


@pytest.mark.timeout(60)
def test_interrupt_cancels_an_async_read(mount_ops: Any, mnt: str) -> None:
    ops = Latency(delay=3600, files=2, size=4096)
    mount_ops(ops)
    t = time.monotonic()
    r = subprocess.run(["timeout", "-s", "INT", "1", "cat", os.path.join(mnt, "file0")],
                       capture_output=True, timeout=30)
    assert r.returncode != 0
    assert time.monotonic() - t < 5
    assert wait_for(lambda: ops.cancelled == 1)
    assert sorted(os.listdir(mnt)) == ["file0", "file1"]  # still serving


class OneFile(ll.Operations):
    """The root (inode 1) and one regular file, ``NAME`` (inode 2, ``SIZE`` bytes)."""

    NAME, SIZE = "file", 0

    def lookup(self, parent: int, name: str) -> Attr:
        if name != self.NAME:
            raise FuseError(errno.ENOENT)
        return Attr(mode=stat.S_IFREG | 0o644, ino=2, size=self.SIZE)

    def getattr(self, ino: int, fh: Optional[int]) -> Attr:
        if ino == 1:
            return Attr(mode=stat.S_IFDIR | 0o755, ino=1, nlink=2)
        return Attr(mode=stat.S_IFREG | 0o644, ino=2, size=self.SIZE)


@pytest.mark.timeout(60)
def test_lookup_names_not_utf8_arrive_as_os_fsdecode_gives_them(mount_ops: Any,
                                                                  mnt: str) -> None:
    """A name that is not UTF-8 reaches lookup decoded with surrogateescape, as os.fsdecode
    decodes it (the callback tries plain UTF-8 first), and one that is reaches it as it is."""
    seen: list[str] = []

    class Raw(OneFile):
        NAME = os.fsdecode(b"b\xff")

        def lookup(self, parent: int, name: str) -> Attr:
            seen.append(name)
            return super().lookup(parent, name)

    mount_ops(Raw(), config=Config(entry_timeout=0, attr_timeout=0, negative_timeout=0))
    assert os.stat(os.path.join(os.fsencode(mnt), b"b\xff")).st_ino == 2
    with pytest.raises(FileNotFoundError):
        os.stat(os.path.join(mnt, "\u00e9t\u00e9"))
    assert seen == ["b\udcff", "\u00e9t\u00e9"]


class Sized(ll.Operations):
    """Files f0, f1, ... in the root, each its own size; lookup and getattr wait a little, so
    that several workers are inside them at once."""

    def __init__(self) -> None:
        self.threads: set[int] = set()

    def _attr(self, ino: int) -> Attr:
        self.threads.add(threading.get_ident())
        time.sleep(0.002)
        if ino == 1:
            return Attr(mode=stat.S_IFDIR | 0o755, ino=1, nlink=2)
        return Attr(mode=stat.S_IFREG | 0o644, ino=ino, size=1000 + ino)

    def lookup(self, parent: int, name: str) -> Attr:
        if parent != 1 or not name.startswith("f") or not name[1:].isdigit():
            raise FuseError(errno.ENOENT)
        return self._attr(10 + int(name[1:]))

    def getattr(self, ino: int, fh: Optional[int]) -> Attr:
        return self._attr(ino)


@pytest.mark.timeout(120)
def test_concurrent_answers_stay_in_their_threads(mnt: str) -> None:
    """Each serving thread answers through its own out struct (its slot in the session): many
    clients stat'ing files of different sizes at once on a multi-threaded mount each get their
    own file's size, and so they do on a second session served after the first has ended."""
    for _ in range(2):
        ops = Sized()
        with pyfuse.testing.mounted(ops, mnt, config=Config(entry_timeout=0, attr_timeout=0),
                                    max_threads=8) as s:
            wrong: list[tuple[int, Any]] = []

            def client(k: int, wrong: list[tuple[int, Any]] = wrong) -> None:
                for i in range(40):
                    n = (k + i) % 16
                    try:
                        size: Any = os.stat(os.path.join(mnt, f"f{n}")).st_size
                    except OSError as e:
                        size = e
                    if size != 1010 + n:
                        wrong.append((n, size))

            threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert wrong == []
            assert len(ops.threads) > 1  # several workers answered
            slots = sum(o is not None for o in s._outs)
            assert 1 < slots <= len(ops.threads)


class Gathered(Sized):
    """Sized, whose file getattrs, once ``gather`` is set, wait until ``parties`` of them are
    inside at once (each on a worker of its own)."""

    def __init__(self, parties: int) -> None:
        super().__init__()
        self.barrier = threading.Barrier(parties, timeout=60)
        self.gather = False

    def getattr(self, ino: int, fh: Optional[int]) -> Attr:
        if self.gather and ino != 1:
            self.barrier.wait()
        return self._attr(ino)


@pytest.mark.timeout(120)
def test_more_workers_than_slots_answer_their_own(mnt: str) -> None:
    """With more workers inside handlers at once than a session has slots
    (PYFUSE_OUT_SLOTS), those without one ask C for their out struct at each request: every
    client still gets its own file's size."""
    from pyfuse._pyfuse_c import lib

    n = lib.PYFUSE_OUT_SLOTS + 8
    ops = Gathered(n)
    with pyfuse.testing.mounted(ops, mnt, config=Config(entry_timeout=60, attr_timeout=0),
                                max_threads=n + 4) as s:
        for k in range(n):  # the entries looked up first (cached for 60 s), one at a time
            os.stat(os.path.join(mnt, f"f{k}"))
        ops.gather = True
        got: dict[int, Any] = {}

        def client(k: int, got: dict[int, Any] = got) -> None:
            try:
                got[k] = os.stat(os.path.join(mnt, f"f{k}")).st_size
            except OSError as e:
                got[k] = e

        threads = [threading.Thread(target=client, args=(k,)) for k in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert got == {k: 1010 + k for k in range(n)}
        assert len(ops.threads) > lib.PYFUSE_OUT_SLOTS  # so some workers had no slot
        assert s._outs[-1] is None  # (nothing kept for them)


class SlowSync(OneFile):
    """A synchronous read that polls pyfuse.context().interrupted."""

    NAME, SIZE = "slow", 4096

    def __init__(self) -> None:
        self.seen_interrupt = threading.Event()
        self.groups: tuple[int, ...] = ()

    def open(self, ino: int, flags: int) -> FileInfo:
        self.groups = pyfuse.context().groups
        return FileInfo(direct_io=True)

    def read(self, ino: int, size: int, offset: int, fh: int) -> bytes:
        ctx = pyfuse.context()
        for _ in range(3000):
            if ctx.interrupted:
                self.seen_interrupt.set()
                raise FuseError(errno.EINTR)
            time.sleep(0.01)
        return b""


@pytest.mark.timeout(60)
def test_sync_handler_sees_interrupt_and_groups(mount_ops: Any, mnt: str) -> None:
    ops = SlowSync()
    mount_ops(ops)
    t = time.monotonic()
    subprocess.run(["timeout", "-s", "INT", "1", "cat", os.path.join(mnt, "slow")],
                   capture_output=True, timeout=30)
    assert time.monotonic() - t < 10
    assert ops.seen_interrupt.wait(5)
    assert set(ops.groups) == set(os.getgroups())


class Changing(ll.Operations):
    """Files whose content and names change behind the kernel's back; caches kept long."""

    def __init__(self) -> None:
        self.names = {"a": 2}
        self.data = {2: b"old"}
        self.session: Optional[ll.Session] = None
        self.notified = threading.Event()

    def _attr(self, ino: int) -> Attr:
        if ino == 1:
            return Attr(mode=stat.S_IFDIR | 0o755, ino=1, nlink=2)
        return Attr(mode=stat.S_IFREG | 0o644, ino=ino, size=len(self.data[ino]))

    def lookup(self, parent: int, name: str) -> Attr:
        if name == "trigger":  # a notification about this very directory, from its lookup
            assert self.session is not None
            self.session.invalidate_entry(ll.ROOT_INO, "a")
            self.notified.set()
        if name not in self.names:
            raise FuseError(errno.ENOENT)
        return self._attr(self.names[name])

    def getattr(self, ino: int, fh: Optional[int]) -> Attr:
        return self._attr(ino)

    def open(self, ino: int, flags: int) -> FileInfo:
        return FileInfo(keep_cache=True)

    def read(self, ino: int, size: int, offset: int, fh: int) -> bytes:
        return self.data[ino][offset:offset + size]


@pytest.mark.timeout(60)
def test_notifications(mount_ops: Any, mnt: str) -> None:
    ops = Changing()
    long = Config(entry_timeout=3600, attr_timeout=3600)
    s = mount_ops(ops, config=long)
    ops.session = s
    a = os.path.join(mnt, "a")

    def read(p: str) -> bytes:
        with open(p, "rb") as f:
            return f.read()

    assert read(a) == b"old"
    ops.data[2] = b"new"  # the same size: the kernel has no reason to drop its pages
    assert read(a) == b"old"  # cached
    s.invalidate_inode(2)
    assert read(a) == b"new"
    s.notify_store(2, 0, b"NEW")
    assert read(a) == b"NEW"  # from the page cache: the filesystem still says "new"
    # a name that changed behind the kernel's back
    ops.names = {"b": 2}
    assert os.path.exists(a)  # cached
    s.invalidate_entry(ll.ROOT_INO, "a")
    assert not os.path.exists(a)
    assert read(os.path.join(mnt, "b")).lower() == b"new"  # the same inode, by its new name
    s.notify_delete(ll.ROOT_INO, 2, "b")
    ops.names = {}
    assert not os.path.exists(os.path.join(mnt, "b"))
    s.invalidate_inode(12345)  # nothing cached: not an error
    # from inside a handler of the same directory: sent after it, never a hang
    ops.names = {"a": 2}
    assert os.path.exists(a)
    assert not os.path.exists(os.path.join(mnt, "trigger"))
    assert ops.notified.wait(5)


def test_notify_after_end_is_an_error(mnt: str) -> None:
    with pyfuse.testing.mounted(Changing(), mnt) as s:
        pass
    with pytest.raises(RuntimeError, match="has ended"):
        s.invalidate_inode(2)


@pytest.mark.timeout(60)
def test_path_api_invalidate_path(mount_ops: Any, mnt: str) -> None:
    class Files(pyfuse.Operations):
        def __init__(self) -> None:
            self.size = 3

        def getattr(self, path: str, fh: Optional[int]) -> Attr:
            if path == "/":
                return Attr(mode=stat.S_IFDIR | 0o755, nlink=2)
            if path == "/f":
                return Attr(mode=stat.S_IFREG | 0o644, size=self.size)
            raise FuseError(errno.ENOENT)

    ops = Files()
    s = mount_ops(ops, config=Config(attr_timeout=3600, entry_timeout=3600))
    p = os.path.join(mnt, "f")
    assert os.stat(p).st_size == 3
    ops.size = 7
    assert os.stat(p).st_size == 3
    s.invalidate_path("/f")
    assert os.stat(p).st_size == 7


def test_async_readdir_and_context(mount_ops: Any, mnt: str) -> None:
    class AsyncFs(ll.Operations):
        def __init__(self) -> None:
            self.ctx: Optional[pyfuse.Context] = None

        async def lookup(self, parent: int, name: str) -> Attr:
            self.ctx = pyfuse.context()
            await asyncio.sleep(0.01)
            if name != "x":
                raise FuseError(errno.ENOENT)
            return Attr(mode=stat.S_IFREG | 0o644, ino=5)

        async def getattr(self, ino: int, fh: Optional[int]) -> Attr:
            if ino == 1:
                return Attr(mode=stat.S_IFDIR | 0o755, ino=1, nlink=2)
            return Attr(mode=stat.S_IFREG | 0o644, ino=5)

        async def readdir(self, ino: int, offset: int, fh: int, plus: bool) -> Any:
            await asyncio.sleep(0.01)
            return [f"n{i}" for i in range(1000)]

    ops = AsyncFs()
    mount_ops(ops)
    assert sorted(os.listdir(mnt)) == sorted(f"n{i}" for i in range(1000))
    assert os.stat(os.path.join(mnt, "x")).st_ino == 5
    assert ops.ctx is not None and ops.ctx.pid == os.getpid() and ops.ctx.uid == os.getuid()
    with pytest.raises(FileNotFoundError):
        os.stat(os.path.join(mnt, "y"))


def test_readdir_template_with_inode_numbers(mount_ops: Any, mnt: str) -> None:
    """(name, attr, offset, ino) entries: one attribute template, each child its own inode
    (packed once a batch); under readdirplus each counts a lookup of its own inode."""
    template = Attr(mode=stat.S_IFREG | 0o644, nlink=1, size=1)

    class Many(ll.Operations):
        def lookup(self, parent: int, name: str) -> Attr:
            if not name.startswith("f"):
                raise FuseError(errno.ENOENT)
            return Attr(mode=stat.S_IFREG | 0o644, ino=100 + int(name[1:]), nlink=1, size=1)

        def getattr(self, ino: int, fh: Optional[int]) -> Attr:
            if ino == 1:
                return Attr(mode=stat.S_IFDIR | 0o755, ino=1, nlink=2)
            return Attr(mode=stat.S_IFREG | 0o644, ino=ino, nlink=1, size=1)

        def readdir(self, ino: int, offset: int, fh: int, plus: bool) -> Any:
            return ((f"f{i}", template, 0, 100 + i) for i in range(2000))

    s = mount_ops(Many(), config=Config(readdirplus="always"))
    with os.scandir(mnt) as it:
        got = {e.name: e.inode() for e in it}
    assert got == {f"f{i}": 100 + i for i in range(2000)}
    inodes, held = s.lookups_held()
    assert inodes == 2000 and held == 2000
    drop_caches()
    assert wait_for(lambda: s.lookups_held() == (0, 0))


class Pollable(OneFile):
    """A file that becomes readable when the test says so, and answers an ioctl."""

    NAME = "p"

    def __init__(self) -> None:
        self.ready = False
        self.handle: Optional[pyfuse.PollHandle] = None
        self.got_handle = threading.Event()

    def open(self, ino: int, flags: int) -> FileInfo:
        return FileInfo(fh=43, direct_io=True)

    def poll(self, ino: int, fh: int, handle: Optional[pyfuse.PollHandle]) -> int:
        if self.ready:
            return select.POLLIN
        if handle is not None:
            self.handle = handle
            self.got_handle.set()
        return 0

    async def ioctl(self, ino: int, cmd: int, arg: int, fh: int, flags: int,
                    data: Optional[bytes], out_size: int) -> Any:
        if data is not None:
            return data[::-1]
        return 7


@pytest.mark.timeout(60)
def test_poll_notify_and_ioctl(mount_ops: Any, mnt: str) -> None:
    ops = Pollable()
    mount_ops(ops)
    p = os.path.join(mnt, "p")
    client = ("import os, select, sys, time\n"
              "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
              "pl = select.poll(); pl.register(fd, select.POLLIN)\n"
              "t = time.monotonic(); r = pl.poll(20000)\n"
              "print(r and r[0][1], round(time.monotonic() - t, 2))\n")
    proc = subprocess.Popen([sys.executable, "-c", client, p], stdout=subprocess.PIPE,
                            text=True)
    assert ops.got_handle.wait(10)  # the caller sleeps: the filesystem holds its handle
    time.sleep(0.2)
    ops.ready = True
    assert ops.handle is not None
    ops.handle.notify()
    out, _ = proc.communicate(timeout=30)
    events, waited = out.split()
    assert int(events) == select.POLLIN and float(waited) < 15
    iowr = (3 << 30) | (8 << 16) | (ord("p") << 8) | 1  # _IOWR('p', 1, 8 bytes)
    io_none = (ord("p") << 8) | 2  # _IO('p', 2)
    with open(p, "rb") as f:
        buf = bytearray(b"12345678")
        assert fcntl.ioctl(f.fileno(), iowr, buf, True) == 0
        assert bytes(buf) == b"87654321"
        assert fcntl.ioctl(f.fileno(), io_none, 0) == 7


class SlowStats(Counting):
    """A readdir that sleeps in the handler and in its generator, and an async statfs."""

    def readdir(self, ino: int, offset: int, fh: int, plus: bool) -> Any:
        time.sleep(0.02)
        first = True
        for e in super().readdir(ino, offset, fh, plus):
            if first:
                time.sleep(0.03)  # pulling entries is the filesystem's time too
                first = False
            yield e

    async def statfs(self, ino: int) -> pyfuse.StatVFS:  # type: ignore[override]
        await asyncio.sleep(0.2)
        return super().statfs(ino)


@pytest.mark.timeout(60)
def test_stats(mount_ops: Any, mnt: str) -> None:
    """stats=True on the inode API: each operation's requests and errors, the handler's time
    apart from pyfuse's; readdirplus is its own row; a batch of forgets is one request; an
    async handler is timed from arrival to reply, its wait apart; ENOENT is an expected
    error, counted apart."""
    ops = SlowStats()
    s = mount_ops(ops, stats=True, config=Config(readdirplus="always", entry_timeout=0,
                                                  attr_timeout=0, negative_timeout=0))
    d = os.path.join(mnt, "d")
    os.mkdir(d)
    for i in range(20):
        open(os.path.join(d, f"f{i}"), "w").close()
    for _ in range(20):
        os.stat(os.path.join(d, "f0"))
    for _ in range(3):
        with pytest.raises(FileNotFoundError):
            os.stat(os.path.join(d, "missing"))
    with os.scandir(d) as it:
        assert sorted(e.name for e in it) == sorted(f"f{i}" for i in range(20))
    os.statvfs(mnt)
    drop_caches()  # (the kernel may have forgotten some already: any forget makes the row)
    assert wait_for(lambda: s.lookups_held() == (0, 0) and s.forget_requests > 0)
    st = s.stats()
    lk = st["lookup"]
    assert lk["count"] >= 23 and lk["errors"] >= 3 and lk["expected"] == lk["errors"], lk
    assert 0 < lk["handler_us"]["p50"] <= lk["total_us"]["p50"], lk
    assert not lk["async"] and "wait_us" not in lk
    assert st["mkdir"]["count"] == 1 and st["create"]["count"] == 20, st
    rp = st["readdirplus"]
    assert rp["count"] >= 1 and rp["errors"] == 0 and "readdir" not in st, st
    assert rp["handler_us"]["max"] >= 50_000, rp  # both sleeps are the filesystem's
    assert rp["pyfuse_us"]["max"] < 20_000, rp    # neither is pyfuse's
    sf = st["statfs"]  # async: its 0.2 s await is the handler's, inside the total
    assert sf["count"] == 1 and sf["async"] and sf["errors"] == 0, sf
    assert 200_000 <= sf["handler_us"]["max"] <= sf["total_us"]["max"], sf
    assert sf["wait_us"]["max"] < sf["total_us"]["max"] and sf["pyfuse_us"]["max"] < 100_000
    assert abs(sum(r["share"] for r in st.values()) - 1) < 1e-6
    assert st["statfs"]["sum_ms"] >= 200 and st["statfs"]["share"] > 0.1, st
    # every forget batch is one timed call: C counts the request before the call, the row
    # after it, so the two agree once the last batch's call has returned (until the first
    # call returns there is no row at all)
    def forget_row() -> Any:
        return s.stats().get("forget", {}).get("count")

    assert wait_for(lambda: forget_row() == s.forget_requests), (
        s.stats().get("forget"), s.forget_requests)
    table = s.stats_table()
    assert "readdirplus" in table and "forget" in table and "statfs *" in table, table


@pytest.mark.timeout(60)
def test_example_stats_flag(example: Any, mnt: str) -> None:
    """``python -m pyfuse.examples.memory_ll --stats``: the table at exit."""
    proc = example("memory_ll", "--stats", mountpoint=mnt)
    os.mkdir(os.path.join(mnt, "d"))
    assert os.listdir(mnt) == ["d"]
    proc.send_signal(signal.SIGUSR1)
    assert wait_for(lambda: "mkdir" in open(proc.log).read()), open(proc.log).read()
    assert pyfuse.is_mounted(mnt)


@pytest.mark.expect_errors
def test_read_results(mount_ops: Any, mnt: str) -> None:
    """read may return bytes, bytearray, a memoryview or any buffer (as the path API's);
    more bytes than asked for is EIO with a log line."""
    class Views(Hello):
        kind = "memoryview"

        def read(self, ino: int, size: int, offset: int, fh: int) -> Any:  # type: ignore[override]
            data = bytearray(b"hello")[offset:offset + size]
            if self.kind == "too many":
                return bytes(size + 1)
            return memoryview(data) if self.kind == "memoryview" else data

    ops = Views()
    mount_ops(ops)
    p = os.path.join(mnt, "hello")
    for kind in ("memoryview", "bytearray"):
        ops.kind = kind
        with open(p, "rb") as f:
            assert f.read() == b"hello"
    ops.kind = "too many"
    with open(p, "rb") as f, pytest.raises(OSError) as ei:
        f.read()
    assert ei.value.errno == errno.EIO
