"""Resource bounds and concurrency on the memory example.

- Mixed operations (successful and failing) for PYFUSE_STRESS_OPS (200,000 in `make test`,
  1,000,000 in `make stress`): the daemon's RSS and open file descriptors stay flat.
- Four client processes with two threads each, for a bounded time, on shared and private
  files: no lost or torn appends, nlink and sizes consistent afterwards.
"""
from __future__ import annotations

import errno
import multiprocessing
import os
import random
import threading
import time
from typing import Any

import pytest

OPS = int(os.environ.get("PYFUSE_STRESS_OPS", "200000"))
SECONDS = float(os.environ.get("PYFUSE_STRESS_SECONDS", "8"))
RECORD = 64


def _status(pid: int) -> tuple[int, int]:
    """(RSS in KiB, open descriptors other than pipes). libfuse gives each worker thread of
    the multi-threaded loop its own splice pipe pair, created on first use and closed when the
    thread ends, so pipes follow the size of the thread pool (checked separately)."""
    with open(f"/proc/{pid}/status") as f:
        lines = f.read().splitlines()
    rss = next(int(line.split()[1]) for line in lines if line.startswith("VmRSS:"))
    threads = next(int(line.split()[1]) for line in lines if line.startswith("Threads:"))
    fds = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    pipes = sum(1 for t in fds if t.startswith("pipe:"))
    assert pipes <= 2 * threads, (pipes, threads)
    return rss, len(fds) - pipes


def _mixed(root: str, n: int, seed: int) -> None:
    rng = random.Random(seed)
    names = [os.path.join(root, f"f{i}") for i in range(16)]
    dirs = [os.path.join(root, f"d{i}") for i in range(4)]
    for _ in range(n):
        p, d = rng.choice(names), rng.choice(dirs)
        op = rng.randrange(10)
        try:
            if op == 0:
                with open(p, "ab") as f:
                    f.write(b"x" * rng.randrange(1, 3000))
            elif op == 1:
                with open(p, "rb") as f:
                    f.read(4096)
            elif op == 2:
                os.lstat(p)
            elif op == 3:
                os.rename(p, rng.choice(names))
            elif op == 4:
                os.unlink(p)
            elif op == 5:
                os.mkdir(d)
            elif op == 6:
                os.rmdir(d)
            elif op == 7:
                os.listdir(root)
            elif op == 8:
                os.setxattr(p, "user.k", b"v" * rng.randrange(100))
            else:
                os.truncate(p, rng.randrange(5000))
        except OSError as e:  # the failing paths are exercised too
            assert e.errno in (errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY, errno.ENODATA), e


@pytest.mark.rss
@pytest.mark.timeout(900)
def test_resources_stay_flat(example: Any, mnt: str) -> None:
    proc = example("memory", mountpoint=mnt)
    warm = max(OPS // 10, 1000)
    _mixed(mnt, warm, 1)
    rss0, fds0 = _status(proc.pid)
    _mixed(mnt, OPS - warm, 2)
    rss1, fds1 = _status(proc.pid)
    print(f"{OPS} operations: daemon RSS {rss0} -> {rss1} KiB, fds {fds0} -> {fds1}")
    assert fds1 == fds0, "the daemon leaked file descriptors (pipes not counted)"
    assert rss1 - rss0 < 8 * 1024, f"the daemon's RSS grew by {rss1 - rss0} KiB"


def _worker(root: str, k: int, deadline: float, q: Any) -> None:
    try:
        log = os.path.join(root, "shared.log")
        own = os.path.join(root, f"own{k}")
        counts = {"records": 0, "own": 0}
        lock = threading.Lock()

        def thread(t: int) -> None:
            rng = random.Random(k * 10 + t)
            fd = os.open(log, os.O_WRONLY | os.O_APPEND)
            try:
                while time.monotonic() < deadline:
                    rec = f"{k}:{t}:{rng.randrange(10**9):09d}".encode().ljust(RECORD - 1, b".")
                    assert os.write(fd, rec + b"\n") == RECORD
                    with lock:
                        counts["records"] += 1
                    if t == 0:  # hard links come and go on this client's own file
                        link = f"{own}.link{rng.randrange(3)}"
                        try:
                            os.link(own, link)
                        except FileExistsError:
                            os.unlink(link)
                        with open(own, "ab") as f:
                            f.write(b"o" * 100)
                        with lock:
                            counts["own"] += 100
            finally:
                os.close(fd)

        with open(own, "wb"):
            pass
        threads = [threading.Thread(target=thread, args=(t,)) for t in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        q.put((k, counts["records"], counts["own"]))
    except BaseException as e:
        q.put((k, repr(e), None))


@pytest.mark.timeout(300)
def test_concurrent_clients_keep_invariants(example: Any, mnt: str) -> None:
    example("memory", mountpoint=mnt)
    with open(os.path.join(mnt, "shared.log"), "wb"):
        pass
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    deadline = time.monotonic() + SECONDS
    procs = [ctx.Process(target=_worker, args=(mnt, k, deadline, q)) for k in range(4)]
    for p in procs:
        p.start()
    results = [q.get(timeout=SECONDS + 120) for _ in procs]
    for p in procs:
        p.join(30)
    assert all(isinstance(r[1], int) for r in results), results
    total = sum(r[1] for r in results)
    with open(os.path.join(mnt, "shared.log"), "rb") as f:
        data = f.read()
    assert len(data) == total * RECORD, "appends were lost or torn"
    lines = data.split(b"\n")[:-1]
    assert len(lines) == total and all(len(line) == RECORD - 1 for line in lines)
    for k, _, own_bytes in results:
        own = os.path.join(mnt, f"own{k}")
        links = [n for n in os.listdir(mnt) if n.startswith(f"own{k}.link")]
        st = os.stat(own)
        assert st.st_nlink == 1 + len(links), (k, st.st_nlink, links)
        assert st.st_size == own_bytes
        for n in links:
            assert os.stat(os.path.join(mnt, n)).st_size == own_bytes


@pytest.mark.rss
@pytest.mark.timeout(600)
def test_wrong_return_values_do_not_leak(mnt: str) -> None:
    """Every kind of wrong value from getattr, read, write and readdir, many times over: each
    request gets EIO, the daemon keeps serving, and its RSS and descriptors stay flat."""
    import sys

    from pyfuse import testing

    here = os.path.dirname(os.path.abspath(__file__))
    n = max(OPS // 10, 5000)
    with testing.mounted_process([sys.executable, os.path.join(here, "bad_fs.py"), mnt],
                                 mnt) as proc:
        def hammer(count: int) -> None:
            fd = os.open(os.path.join(mnt, "f"), os.O_RDWR)
            try:
                for i in range(count):
                    for op in (lambda i=i: os.lstat(os.path.join(mnt, f"w{i % 10}")),
                               lambda: os.pread(fd, 4096, 0),
                               lambda: os.pwrite(fd, b"abc", 0),
                               lambda: os.listdir(os.path.join(mnt, "d"))):
                        with pytest.raises(OSError) as ei:
                            op()
                        assert ei.value.errno == errno.EIO
            finally:
                os.close(fd)

        hammer(n // 10)
        rss0, fds0 = _status(proc.pid)
        hammer(n)
        rss1, fds1 = _status(proc.pid)
        print(f"{4 * n} failing requests: daemon RSS {rss0} -> {rss1} KiB, fds {fds0} -> {fds1}")
        assert fds1 == fds0
        assert rss1 - rss0 < 4 * 1024, f"RSS grew by {rss1 - rss0} KiB"
