"""pyfuse.compat.llfuse: a filesystem written against llfuse's API (tests/compat_fs/llfs.py)
runs unchanged through ``python -m pyfuse.compat``: listings, reads, errors, and llfuse's
global lock (held in every handler, let go by ``lock_released``, so slow reads overlap).
llfuse's own test suite is run unchanged by ``make test-originals``."""
from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import os
import subprocess
import sys
import threading
import time
from typing import Any, Iterator

import pytest

from pyfuse import testing

FS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compat_fs", "llfs.py")


@pytest.mark.timeout(60)
def test_llfuse_filesystem_through_the_runner(tmp_path: Any) -> None:
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    with testing.mounted_process([sys.executable, "-m", "pyfuse.compat", FS, mnt], mnt,
                                 log=str(tmp_path / "llfs.log")):
        assert sorted(os.listdir(mnt)) == ["a", "b"]
        assert open(os.path.join(mnt, "a"), "rb").read() == b"alpha\n"
        with pytest.raises(OSError) as ei:
            open(os.path.join(mnt, "a"), "wb")
        assert ei.value.errno == errno.EROFS
        with pytest.raises(FileNotFoundError):
            os.stat(os.path.join(mnt, "nope"))

        def read_b(i: int) -> bytes:  # 4 pages 512 KiB apart: 4 READs (past readahead)
            with open(os.path.join(mnt, "b"), "rb", buffering=0) as f:
                return os.pread(f.fileno(), 100, i * 512 * 1024)
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            assert list(pool.map(read_b, range(4))) == [bytes(range(100))] * 4
        held, reads, most, pid, uid = open(os.path.join(mnt, "report")).read().split()
        assert held == "True" and int(reads) >= 5  # every read ran holding the lock
        assert int(most) >= 2  # and reads overlapped once they released it
        # the ctx the last open kept, read after its reply: the caller's (this process)
        assert (int(pid), int(uid)) == (os.getpid(), os.getuid())
        # float times are truncated to ints, as llfuse's C struct does
        assert os.stat(os.path.join(mnt, "float-times")).st_mtime_ns == 1_500_000_000 * 10**9
        # refused: EIO, and the log says why
        for name in ("bad-timeout", "nan-timeout", "big-uid", "none"):
            with pytest.raises(OSError) as ei:
                os.stat(os.path.join(mnt, name))
            assert ei.value.errno == errno.EIO
        said = ["lookup 'bad-timeout' in inode 1: the entry returned has entry_timeout=-1",
                "lookup 'nan-timeout' in inode 1: the entry returned has attr_timeout=nan",
                "lookup 'big-uid' in inode 1: the entry returned has nlink 1, uid 1099511627776, "
                "gid 0: beyond 32 bits",
                # one line naming the request (its bytes name decoded), then the traceback
                "lookup 'none' in inode 1 raised TypeError: lookup must return an "
                "EntryAttributes, not NoneType; replying EIO"]
        end = time.monotonic() + 10  # the daemon logs after the reply: the client may be first
        while True:
            log = open(tmp_path / "llfs.log").read()
            if all(line in log for line in said) or time.monotonic() > end:
                break
            time.sleep(0.05)
        assert [line for line in said if line not in log] == []
        assert "internal error" not in log


def test_runner_maps_llfuse(tmp_path: Any) -> None:
    script = tmp_path / "p.py"
    script.write_text("import llfuse\nprint(llfuse.__name__, llfuse.get_ino_t_bits())\n")
    r = subprocess.run([sys.executable, "-m", "pyfuse.compat", str(script)],
                       capture_output=True, text=True, timeout=30)
    assert r.stdout.split() == ["pyfuse.compat.llfuse", "64"], r.stderr


@contextlib.contextmanager
def _llfuse_serving(ops: Any, mnt: str) -> Iterator[threading.Thread]:
    """``ops`` served by pyfuse.compat.llfuse in this process (one worker) at ``mnt``; yields
    the thread running ``llfuse.main``."""
    import pyfuse.compat.llfuse as llfuse

    llfuse.init(ops, mnt, ["fsname=one"])
    serving = threading.Thread(target=llfuse.main, kwargs={"workers": 1,
                                                           "handle_signals": False})
    serving.start()
    try:
        yield serving
    finally:
        subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
        serving.join(20)
        llfuse.close()
    assert not serving.is_alive()


def _one(llfuse: Any) -> Any:
    """An llfuse filesystem of one file, "f" (inode 2); every lookup records whether it
    holds llfuse's lock (``held``) and, but a lookup of "keep", which keeps its ctx unread
    (``kept``), its caller's pid (``pids``)."""

    class One(llfuse.Operations):
        def __init__(self) -> None:
            super().__init__()
            self.held: list[bool] = []
            self.pids: list[int] = []
            self.kept: list[Any] = []

        def lookup(self, parent: int, name: bytes, ctx: Any) -> Any:
            self.held.append(llfuse.lock.held())
            if name == b"keep":
                self.kept.append(ctx)
            else:
                self.pids.append(ctx.pid)
            if name != b"f":
                raise llfuse.FUSEError(errno.ENOENT)
            return self.getattr(2, ctx)

        def getattr(self, inode: int, ctx: Any = None) -> Any:
            a = llfuse.EntryAttributes()
            a.st_ino, a.st_mode = inode, (0o40755 if inode == 1 else 0o100644)
            a.entry_timeout = a.attr_timeout = 0
            return a

    return One()


def _stat_elsewhere(path: str) -> int:
    """The pid of a new process that stats ``path`` (whatever comes of it)."""
    r = subprocess.run([sys.executable, "-c", "import os, sys\nprint(os.getpid())\n"
                        "try: os.stat(sys.argv[1])\nexcept OSError: pass", path],
                       capture_output=True, text=True, timeout=30)
    return int(r.stdout)


@pytest.mark.timeout(60)
def test_llfuse_lock_is_the_one_requests_wait_for(tmp_path: Any) -> None:
    """llfuse.lock is the lock pyfuse's C shim takes around every request: while another
    thread holds it, a request waits (and is served once it is let go of); inside a handler
    it is held by the handler's thread."""
    import pyfuse.compat.llfuse as llfuse

    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    ops = _one(llfuse)
    with _llfuse_serving(ops, mnt):
        assert os.stat(os.path.join(mnt, "f")).st_ino == 2 and ops.held == [True]
        assert not llfuse.lock.held()
        done: list[Any] = []
        client = threading.Thread(target=lambda: done.append(os.stat(os.path.join(mnt, "f"))))
        with llfuse.lock:
            assert llfuse.lock.held()
            with pytest.raises(RuntimeError, match="more than once"):
                llfuse.lock.acquire()
            tried: list[bool] = []
            other = threading.Thread(target=lambda: tried.append(llfuse.lock.acquire(0.1)))
            other.start()
            other.join(10)
            assert tried == [False]  # timed out: this thread holds it
            client.start()
            time.sleep(0.5)
            assert not done and client.is_alive()  # the request waits for the lock
        client.join(10)
        assert done and done[0].st_ino == 2 and ops.held == [True, True]
        with pytest.raises(RuntimeError, match="holding thread"):
            llfuse.lock.release()
        assert llfuse.lock.acquire(timeout=0.1) is True
        llfuse.lock.release()


@pytest.mark.timeout(60)
def test_llfuse_unmount_while_a_thread_holds_the_lock(tmp_path: Any) -> None:
    """Unmounted (lazily) while a thread of the program holds llfuse.lock and a request waits
    for it: the request is served once the lock is let go of, and ``main()`` then returns (as
    on llfuse, a request waits for the lock, never fails for it, and nothing hangs)."""
    import pyfuse.compat.llfuse as llfuse

    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    ops = _one(llfuse)
    with _llfuse_serving(ops, mnt) as serving:
        done: list[Any] = []
        client = threading.Thread(target=lambda: done.append(os.stat(os.path.join(mnt, "f"))))
        with llfuse.lock:
            client.start()
            time.sleep(0.3)
            subprocess.run(["fusermount3", "-u", "-z", mnt], check=True, timeout=30)
            time.sleep(0.3)
            assert not done and client.is_alive() and serving.is_alive()
        client.join(10)
        assert done and done[0].st_ino == 2 and ops.held == [True]
        serving.join(20)
        assert not serving.is_alive()  # main() returned: the session ended


@pytest.mark.timeout(60)
def test_llfuse_ctx_is_each_requests_own(tmp_path: Any) -> None:
    """Each request's ctx reads its own caller, request after request (the adapter hands one
    object out again while no handler keeps it); a ctx a handler kept stays its caller's
    after the reply, whatever requests come next."""
    import pyfuse.compat.llfuse as llfuse

    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    ops = _one(llfuse)
    f = os.path.join(mnt, "f")
    with _llfuse_serving(ops, mnt):
        others = []
        for _ in range(3):
            os.stat(f)
            others.append(_stat_elsewhere(f))
        me = os.getpid()
        assert ops.pids == [me, others[0], me, others[1], me, others[2]], (ops.pids, others)
        keeper = _stat_elsewhere(os.path.join(mnt, "keep"))
        os.stat(f)
        other = _stat_elsewhere(f)
        assert ops.pids[-2:] == [me, other]
        assert len(ops.kept) == 1 and ops.kept[0].pid == keeper


@pytest.mark.timeout(60)
@pytest.mark.expect_errors
def test_llfuse_listing_gives_each_entry_its_inode_and_type(tmp_path: Any, caplog: Any) -> None:
    """A plain listing (llfuse's: no readdirplus) hands the kernel each entry's own inode
    number and file type, whatever mix of modes the entries have (the adapter sends only
    those); str and bytes names both arrive; a mode without a file type fails the listing
    (EIO, the log names it), as a readdirplus entry's would."""
    import stat

    import pyfuse.compat.llfuse as llfuse

    kinds = {b"d": stat.S_IFDIR | 0o755, b"f": stat.S_IFREG | 0o644, b"l": stat.S_IFLNK | 0o777,
             b"p": stat.S_IFIFO | 0o600, "g": stat.S_IFREG | 0o600, b"h": stat.S_IFREG | 0o644}

    class Listing(llfuse.Operations):
        def getattr(self, inode: int, ctx: Any = None) -> Any:
            a = llfuse.EntryAttributes()
            a.st_ino, a.st_mode = inode, stat.S_IFDIR | 0o755
            return a

        def lookup(self, parent: int, name: bytes, ctx: Any) -> Any:
            if parent == 1 and name == b"bad":
                return self.getattr(2)
            raise llfuse.FUSEError(errno.ENOENT)

        def opendir(self, inode: int, ctx: Any) -> int:
            return inode

        def readdir(self, fh: int, off: int) -> Iterator[Any]:
            if fh == 2:  # /bad: one entry whose mode has no file type
                a = llfuse.EntryAttributes()
                a.st_ino, a.st_mode = 7, 0o644
                yield b"x", a, 1
                return
            for i, (name, mode) in enumerate(list(kinds.items())[off:], off):
                yield name, self._entry(100 + i, mode), i + 1
            if off <= len(kinds):
                yield b"bad", self._entry(2, stat.S_IFDIR | 0o755), len(kinds) + 1

        def _entry(self, ino: int, mode: int) -> Any:
            a = llfuse.EntryAttributes()
            a.st_ino, a.st_mode = ino, mode
            a.st_size = "not looked at"  # a plain listing reads the inode and the type only
            return a

    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    with _llfuse_serving(Listing(), mnt):
        with os.scandir(mnt) as it:
            seen = {e.name: (e.inode(), e.is_dir(follow_symlinks=False),
                             e.is_file(follow_symlinks=False), e.is_symlink()) for e in it}
        expect = {(n if isinstance(n, str) else n.decode()): (100 + i, stat.S_ISDIR(m),
                                                                stat.S_ISREG(m), stat.S_ISLNK(m))
                  for i, (n, m) in enumerate(kinds.items())}
        expect["bad"] = (2, True, False, False)
        assert seen == expect
        with pytest.raises(OSError) as ei:
            os.listdir(os.path.join(mnt, "bad"))
        assert ei.value.errno == errno.EIO
    assert "readdir of inode 2: readdir yielded an attr whose mode has no valid file type: " \
        "entry 0 of the listing (b'x', mode 0o644)" in caplog.text


@pytest.mark.timeout(60)
@pytest.mark.parametrize("module", ["runner", "llfuse"])
def test_llfuse_file_handles_of_all_64_bits(tmp_path: Any, module: str) -> None:
    """An llfuse program's file handles reach its read as it gave them (llfuse's fh is a
    uint64_t), bit 63 included: pyfuse's own APIs keep that bit for fd_backed files, a
    compat session does not (2**63 | 3 is not file descriptor 3). "llfuse": the original,
    when it is installed (make test-originals installs it)."""
    if module == "llfuse":
        pytest.importorskip("llfuse", reason="llfuse itself is not installed")
        argv = [sys.executable]
    else:
        argv = [sys.executable, "-m", "pyfuse.compat"]
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    handles = [0, 7, 2**63 - 1, 2**63, 2**63 | 3, 2**64 - 1]
    with testing.mounted_process([*argv, os.path.join(os.path.dirname(FS), "llhandles.py"),
                                  mnt], mnt, log=str(tmp_path / "llhandles.log")):
        for k, fh in enumerate(handles):
            with open(os.path.join(mnt, f"h{k}"), "rb") as f:
                assert f.read() == b"fh=%d\n" % fh
