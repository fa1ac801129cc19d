"""The kernel's caches under the filesystem's control (docs/caching.md): requests that never
reach Python. Counted two ways: the filesystem's own calls, and the requests the kernel sent
(libfuse's trace, logged at DEBUG). Directory listings cached (FileInfo(cache_readdir=True,
keep_cache=True) from opendir, or no OPENDIR at all), files opened without OPEN, symlink
targets cached, lookups in one directory in parallel; each invalidated as documented."""
from __future__ import annotations

import errno
import logging
import os
import stat
import threading
import time
from typing import Any, Iterator, Optional

import pytest

import pyfuse
import pyfuse.lowlevel as ll
from pyfuse._pyfuse_c import lib

N = 10_000
DIR, LINK, FILE = 2, 3, 4


class Tree(ll.Operations):
    """/d: N files; /ln: a symlink; /f: a file. Counts what reaches it."""

    def __init__(self) -> None:
        self.names = [f"f{i:05d}" for i in range(N)]
        self.calls: dict[str, int] = {}
        self.data = b"version 1\n"

    def _count(self, op: str) -> None:
        self.calls[op] = self.calls.get(op, 0) + 1

    def getattr(self, ino: int, fh: Optional[int]) -> pyfuse.Attr:
        if ino == ll.ROOT_INO:
            return pyfuse.Attr(mode=stat.S_IFDIR | 0o755, ino=ino, nlink=3)
        if ino == DIR:
            return pyfuse.Attr(mode=stat.S_IFDIR | 0o755, ino=ino, nlink=2, mtime_ns=1)
        if ino == LINK:
            return pyfuse.Attr(mode=stat.S_IFLNK | 0o777, ino=ino, size=6)
        if ino == FILE:
            return pyfuse.Attr(mode=stat.S_IFREG | 0o644, ino=ino, size=len(self.data),
                               mtime_ns=1)
        return pyfuse.Attr(mode=stat.S_IFREG | 0o644, ino=ino)

    def lookup(self, parent: int, name: str) -> ll.Entry:
        ino = {(1, "d"): DIR, (1, "ln"): LINK, (1, "f"): FILE}.get((parent, name))
        if ino is None and parent == DIR and name in self.names:
            ino = 100 + self.names.index(name)
        if ino is None:
            raise pyfuse.FuseError(errno.ENOENT)
        return ll.Entry(self.getattr(ino, None), entry_timeout=60, attr_timeout=60)

    def readlink(self, ino: int) -> str:
        self._count("readlink")
        return "target"

    def read(self, ino: int, size: int, offset: int, fh: int) -> bytes:
        self._count("read")
        return self.data[offset:offset + size]

    def readdir(self, ino: int, offset: int, fh: int, plus: bool) -> Iterator[Any]:
        self._count("readdir")
        if ino == ll.ROOT_INO:
            yield from ("d", "ln", "f")
            return
        yield from self.names


class CachedListing(Tree):
    """opendir asks the kernel to keep what it lists, across opens."""

    def opendir(self, ino: int, flags: int) -> pyfuse.FileInfo:
        self._count("opendir")
        return pyfuse.FileInfo(keep_cache=True, cache_readdir=True)


class PlainListing(Tree):
    def opendir(self, ino: int, flags: int) -> None:
        self._count("opendir")


class Trace:
    """The requests the kernel sent, from libfuse's trace (mount with debug=True)."""

    def __init__(self, caplog: Any) -> None:
        caplog.set_level(logging.DEBUG, logger="pyfuse")
        self.caplog = caplog
        self.mark = 0

    def since(self) -> dict[str, int]:
        """Opcodes counted since the last call."""
        records = self.caplog.records[self.mark:]
        self.mark = len(self.caplog.records)
        out: dict[str, int] = {}
        for r in records:
            msg = r.getMessage()
            if "opcode: " in msg:
                op = msg.split("opcode: ", 1)[1].split(" ", 1)[0]
                out[op] = out.get(op, 0) + 1
        return out


def _mount(ops: ll.Operations, mnt: str, **config: Any) -> Any:
    return ll.mount(ops, mnt, debug=True, config=pyfuse.Config(**config))


@pytest.mark.timeout(60)
def test_no_opendir_listing_is_served_by_the_kernel(mnt: str, caplog: Any) -> None:
    """No opendir, Config(no_open=True): the kernel's first OPENDIR is answered ENOSYS and
    none follows; the second listing of 10,000 entries reaches neither readdir nor the daemon
    at all. After invalidate_inode of the directory the next one is read again, with a name
    added."""
    ops = Tree()
    trace = Trace(caplog)
    with _mount(ops, mnt, no_open=True) as session:
        d = os.path.join(mnt, "d")
        assert len(os.listdir(d)) == N
        first = ops.calls.get("readdir", 0)
        trace.since()
        assert len(os.listdir(d)) == N
        assert ops.calls.get("readdir", 0) == first
        sent = trace.since()
        assert not {"OPENDIR", "READDIR", "READDIRPLUS", "RELEASEDIR"} & set(sent), sent
        ops.names.append("added")
        session.invalidate_inode(DIR)
        again = os.listdir(d)
        assert "added" in again and len(again) == N + 1
        assert ops.calls["readdir"] == first + 1


@pytest.mark.timeout(60)
def test_cache_readdir_from_opendir(mnt: str, caplog: Any) -> None:
    """opendir returns FileInfo(cache_readdir=True, keep_cache=True): each listing still
    opens the directory (opendir runs) but the second one reads nothing."""
    ops = CachedListing()
    with _mount(ops, mnt) as session:
        d = os.path.join(mnt, "d")
        assert len(os.listdir(d)) == N
        reads = ops.calls["readdir"]
        assert len(os.listdir(d)) == N
        assert ops.calls["readdir"] == reads and ops.calls["opendir"] == 2
        ops.names.append("added")
        session.invalidate_inode(DIR)
        assert "added" in os.listdir(d)
        assert ops.calls["readdir"] == reads + 1


@pytest.mark.timeout(60)
def test_without_the_flag_every_listing_is_read(mnt: str) -> None:
    ops = PlainListing()
    with _mount(ops, mnt):
        d = os.path.join(mnt, "d")
        for _ in range(3):
            assert len(os.listdir(d)) == N
        assert ops.calls["opendir"] == 3 and ops.calls["readdir"] >= 3


@pytest.mark.timeout(60)
def test_a_listing_changed_through_the_mount_is_read_again(mnt: str) -> None:
    """The kernel drops a cached listing itself when the directory changes through the mount
    (memory_ll with no_open: no opendir, listings kept; a new file shows at once)."""
    from pyfuse.examples.memory_ll import MemoryLL
    with ll.mount(MemoryLL(), mnt, config=pyfuse.Config(no_open=True)):
        for i in range(50):
            open(os.path.join(mnt, f"x{i}"), "w").close()
        assert len(os.listdir(mnt)) == 50
        open(os.path.join(mnt, "new"), "w").close()
        assert "new" in os.listdir(mnt)
        os.unlink(os.path.join(mnt, "x0"))
        assert "x0" not in os.listdir(mnt) and len(os.listdir(mnt)) == 50
        os.rename(os.path.join(mnt, "x1"), os.path.join(mnt, "y1"))
        assert "y1" in os.listdir(mnt) and "x1" not in os.listdir(mnt)


@pytest.mark.timeout(60)
def test_no_open_files(mnt: str, caplog: Any) -> None:
    """No open, Config(no_open=True): one OPEN (answered ENOSYS) and then none, no RELEASE;
    the file's pages stay cached across opens (read reached once) until invalidate_inode."""
    ops = Tree()
    trace = Trace(caplog)
    with _mount(ops, mnt, no_open=True) as session:
        f = os.path.join(mnt, "f")
        assert open(f, "rb").read() == b"version 1\n"
        trace.since()
        for _ in range(3):
            assert open(f, "rb").read() == b"version 1\n"
        sent = trace.since()
        assert not {"OPEN", "RELEASE", "READ"} & set(sent), sent
        assert ops.calls["read"] == 1
        ops.data = b"version 2\n"
        session.invalidate_inode(FILE)
        assert open(f, "rb").read() == b"version 2\n"


@pytest.mark.timeout(60)
def test_by_default_every_open_is_answered(mnt: str, caplog: Any) -> None:
    """Without Config(no_open=True), OPEN and OPENDIR of a filesystem without open/opendir
    are answered (in C) every time, and each open drops the file's cached pages."""
    ops = Tree()
    trace = Trace(caplog)
    with _mount(ops, mnt):
        f = os.path.join(mnt, "f")
        for _ in range(3):
            assert open(f, "rb").read() == b"version 1\n"
        os.listdir(os.path.join(mnt, "d"))
        os.listdir(os.path.join(mnt, "d"))
        sent = trace.since()
        assert sent.get("OPEN") == 3 and sent.get("OPENDIR", 0) >= 2, sent
        assert ops.calls["read"] == 3


@pytest.mark.timeout(60)
def test_cache_symlinks(mnt: str) -> None:
    ops = Tree()
    with _mount(ops, mnt, cache_symlinks=True) as session:
        ln = os.path.join(mnt, "ln")
        assert {os.readlink(ln) for _ in range(5)} == {"target"}
        assert ops.calls["readlink"] == 1
        session.invalidate_inode(LINK)
        assert os.readlink(ln) == "target"
        assert ops.calls["readlink"] == 2
    ops = Tree()
    with _mount(ops, mnt):  # off by default: every readlink asks
        for _ in range(3):
            os.readlink(os.path.join(mnt, "ln"))
        assert ops.calls["readlink"] == 3


class SlowLookups(ll.Operations):
    """Lookups in the root that each wait until another one runs beside them, or ``alone``
    seconds have passed; records how many ran at once. (A fixed sleep made the parallel case
    depend on the machine: under load the four clients could reach the kernel more than the
    sleep apart.)"""

    def __init__(self, alone: float) -> None:
        self.running = self.most = 0
        self.alone = alone
        self.cond = threading.Condition()

    def lookup(self, parent: int, name: str) -> ll.Entry:
        with self.cond:
            self.running += 1
            self.most = max(self.most, self.running)
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.most >= 2, timeout=self.alone)
            self.running -= 1
        return ll.Entry(pyfuse.Attr(mode=stat.S_IFREG | 0o644, ino=10 + int(name[1:])),
                        entry_timeout=0, attr_timeout=0)

    def getattr(self, ino: int, fh: Optional[int]) -> pyfuse.Attr:
        if ino == ll.ROOT_INO:
            return pyfuse.Attr(mode=stat.S_IFDIR | 0o755, ino=ino, nlink=2)
        return pyfuse.Attr(mode=stat.S_IFREG | 0o644, ino=ino)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallel", [True, False])
def test_parallel_dirops(mnt: str, parallel: bool) -> None:
    """On by default: lookups of names in one directory run at once; off, the kernel sends
    them one at a time (each lookup then waits 0.3 s alone, time enough for another to come
    if the kernel sent them at once; on, it waits up to 10 s for a second to run beside it)."""
    ops = SlowLookups(alone=10 if parallel else 0.3)
    with ll.mount(ops, mnt, config=pyfuse.Config(parallel_dirops=parallel)):
        threads = [threading.Thread(target=os.stat, args=(os.path.join(mnt, f"n{i}"),))
                   for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert (ops.most >= 2) if parallel else (ops.most == 1), ops.most


class PathTree(pyfuse.Operations):
    def __init__(self, info: Any) -> None:
        self.info = info
        self.readdirs = 0

    def getattr(self, path: str, fh: Optional[int]) -> pyfuse.Attr:
        if path in ("/", "/d"):
            return pyfuse.Attr(mode=stat.S_IFDIR | 0o755, nlink=2, mtime_ns=1)
        return pyfuse.Attr(mode=stat.S_IFREG | 0o644)

    def opendir(self, path: str) -> Any:
        return self.info

    def readdir(self, path: str, offset: int, fh: int, plus: bool) -> list[str]:
        self.readdirs += 1
        return [f"f{i}" for i in range(100)]


#: libfuse's high-level API hands FileInfo(keep_cache, cache_readdir) of opendir to the kernel
#: from 3.16 on (libfuse #821); from 3.14 on the shim's own I/O puts them back (csrc/io.c);
#: before 3.14 they are dropped. This build's libfuse:
CARRIES_DIR_FLAGS = lib.pyfuse_libfuse_version() >= 314


@pytest.mark.timeout(60)
def test_path_api_cache_readdir(mnt: str) -> None:
    ops = PathTree(pyfuse.FileInfo(5, keep_cache=True, cache_readdir=True))
    with pyfuse.mount(ops, mnt) as session:
        for _ in range(3):
            assert len(os.listdir(os.path.join(mnt, "d"))) == 100
        assert ops.readdirs == (1 if CARRIES_DIR_FLAGS else 3), (lib.pyfuse_libfuse_version(),
                                                                 ops.readdirs)
        session.invalidate_path("/d")
        assert len(os.listdir(os.path.join(mnt, "d"))) == 100
        assert ops.readdirs == (2 if CARRIES_DIR_FLAGS else 4)


@pytest.mark.timeout(60)
def test_path_api_plain_opendir_lists_every_time(mnt: str) -> None:
    ops = PathTree(5)
    with pyfuse.mount(ops, mnt):
        for _ in range(3):
            os.listdir(os.path.join(mnt, "d"))
    assert ops.readdirs == 3


@pytest.mark.timeout(60)
@pytest.mark.expect_errors
def test_opendir_file_info_checked(mnt: str) -> None:
    ops = PathTree(pyfuse.FileInfo(5, direct_io=True))
    with pyfuse.mount(ops, mnt):
        with pytest.raises(OSError) as ei:
            os.listdir(os.path.join(mnt, "d"))
        assert ei.value.errno == errno.EIO


class Handleless(ll.Operations):
    """No opendir: listings of /d (3,000 names) come without a handle; ``kind`` says how
    readdir yields them: positional (offset 0), with offsets, or from an async generator."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.calls = 0
        self.finished = 0

    def getattr(self, ino: int, fh: Optional[int]) -> pyfuse.Attr:
        return pyfuse.Attr(mode=stat.S_IFDIR | 0o755, ino=ino, nlink=2, mtime_ns=1)

    def readdir(self, ino: int, offset: int, fh: int, plus: bool) -> Any:
        self.calls += 1
        assert fh == 0
        if self.kind == "async":
            return self._agen(offset)
        return self._gen(offset)

    def _gen(self, offset: int) -> Iterator[Any]:
        try:
            if self.kind == "offsets":
                for i in range(offset, 3000):
                    yield pyfuse.DirEntry(f"n{i}", None, i + 1)
            else:
                for i in range(3000):
                    yield f"n{i}"
        finally:
            self.finished += 1

    async def _agen(self, offset: int) -> Any:
        import asyncio
        try:
            for i in range(offset, 3000):
                await asyncio.sleep(0)
                yield pyfuse.DirEntry(f"n{i}", None, i + 1)
        finally:
            self.finished += 1


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["positional", "offsets", "async"])
def test_handleless_listings(mnt: str, kind: str) -> None:
    """Without opendir a listing spread over many requests is one call of readdir, whatever
    its offset mode (a positional one, one with offsets, an async generator); two readers
    interleaved get the whole listing each; one abandoned half way is closed (its generator's
    finally: runs) at the latest when the session ends."""
    import subprocess
    import sys
    ops = Handleless(kind)
    with ll.mount(ops, mnt, config=pyfuse.Config(readdirplus="off", no_open=True)) as session:
        names = sorted(os.listdir(mnt))
        assert names == sorted(f"n{i}" for i in range(3000))
        assert ops.calls == 1
        session.invalidate_inode(ll.ROOT_INO)
        a, b = os.scandir(mnt), os.scandir(mnt)
        got_a, got_b = [], []
        for _ in range(1000):  # interleaved, a kernel buffer each at a time
            got_a.append(next(a).name)
            got_b.append(next(b).name)
        got_a += [e.name for e in a]
        got_b += [e.name for e in b]
        assert sorted(got_a) == sorted(got_b) == names
        session.invalidate_inode(ll.ROOT_INO)
        code = ("import os, sys\nit = os.scandir(sys.argv[1])\n[next(it) for _ in range(50)]\n"
                "it.close()\n")
        subprocess.run([sys.executable, "-c", code, mnt], check=True, timeout=30)
        started = ops.calls
    deadline = time.monotonic() + 10
    while ops.finished < started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ops.finished == started  # every generator closed, the abandoned one too
