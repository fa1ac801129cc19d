"""Stopping a daemon whose handler is stuck (``run()`` in the main thread, both APIs, libfuse's
multi-threaded loop, its single-threaded one and pyfuse's own): the first SIGINT/SIGTERM
says which requests it waits for and unmounts once they are answered (the waiting client gets
its data); a second one ends it at once: the waiting client gets an error at once, the mount
is gone and the process exits although the handler is still sleeping."""
from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from pyfuse import is_mounted, testing

DAEMON = '''\
import errno, stat, sys, time, logging
import pyfuse
import pyfuse.lowlevel as ll
logging.basicConfig(level=logging.INFO)
api, mnt, delay, loop = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
DATA = b"hello"


class Slow(pyfuse.Operations):
    def getattr(self, path, fh):
        if path == "/":
            return pyfuse.Attr(mode=stat.S_IFDIR | 0o755, nlink=2)
        if path == "/f":
            return pyfuse.Attr(mode=stat.S_IFREG | 0o444, size=len(DATA))
        raise pyfuse.FuseError(errno.ENOENT)

    def read(self, path, size, offset, fh):
        time.sleep(delay)
        return DATA[offset:offset + size]


class SlowLL(ll.Operations):
    def lookup(self, parent, name):
        if name != "f":
            raise pyfuse.FuseError(errno.ENOENT)
        return ll.Entry(self.getattr(2, None))

    def getattr(self, ino, fh):
        if ino == 1:
            return pyfuse.Attr(mode=stat.S_IFDIR | 0o755, nlink=2, ino=1)
        return pyfuse.Attr(mode=stat.S_IFREG | 0o444, size=len(DATA), ino=2)

    def read(self, ino, size, offset, fh):
        time.sleep(delay)
        return DATA[offset:offset + size]


kw = {"threads": loop != "single", "sticky": loop == "sticky"}
if api == "path":
    pyfuse.run(Slow(), mnt, **kw)
else:
    ll.run(SlowLL(), mnt, **kw)
print("run returned", flush=True)
'''

CASES = [("path", "mt"), ("path", "single"), ("path", "sticky"), ("inode", "mt")]


def _start(tmp_path: Any, api: str, loop: str, delay: float) -> tuple[Any, str, str]:
    script = tmp_path / "daemon.py"
    script.write_text(DAEMON)
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    log = str(tmp_path / "daemon.log")
    cm = testing.mounted_process([sys.executable, str(script), api, mnt, str(delay), loop],
                                 mnt, log=log)
    return cm, mnt, log


def _reader(path: str, out: dict[str, Any]) -> threading.Thread:
    """One READ, on a thread: its answer (or errno) and how long it took."""
    fd = os.open(path, os.O_RDONLY)

    def run() -> None:
        start = time.monotonic()
        try:
            out["data"] = os.pread(fd, 100, 0)
        except OSError as e:
            out["error"] = e.errno
        finally:
            try:
                os.close(fd)
            except OSError:
                pass
        out["took"] = time.monotonic() - start
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _wait_log(log: str, text: str, timeout: float = 10.0) -> str:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        content = open(log).read()
        if text in content:
            return content
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not in the daemon's log:\n{open(log).read()}")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("api,loop", CASES)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_first_signal_waits_for_the_request_and_says_which(tmp_path: Any, api: str, loop: str,
                                                           sig: int) -> None:
    cm, mnt, log = _start(tmp_path, api, loop, 3.0)
    with cm as proc:
        got: dict[str, Any] = {}
        t = _reader(os.path.join(mnt, "f"), got)
        time.sleep(0.5)  # the read is in its handler
        proc.send_signal(sig)
        text = _wait_log(log, "in progress")
        assert "1 in progress: " in text and "read(" in text and "daemon.py" in text, text
        assert is_mounted(mnt)  # until the read is answered
        assert proc.wait(timeout=20) == 0, open(log).read()
        t.join(10)
        assert got.get("data") == b"hello", got  # the client got its answer
        assert not is_mounted(mnt)
        assert "run returned" in open(log).read()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("api,loop", CASES)
def test_second_signal_ends_at_once(tmp_path: Any, api: str, loop: str) -> None:
    """Multi-threaded: the connection is aborted (the waiting client gets an error at once),
    the mount detached, run() returns, the handler is left to finish on its own. One thread:
    the handler (on run()'s thread) gets KeyboardInterrupt, its request is answered EINTR,
    and run() raises KeyboardInterrupt after unmounting, as Ctrl-C in Python code does."""
    cm, mnt, log = _start(tmp_path, api, loop, 40.0)
    with cm as proc:
        got: dict[str, Any] = {}
        t = _reader(os.path.join(mnt, "f"), got)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _wait_log(log, "in progress")
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        status = proc.wait(timeout=10)
        assert time.monotonic() - start < 5
        t.join(10)
        assert "error" in got and got["took"] < 10, got  # answered at once, not after 40 s
        assert not is_mounted(mnt)
        text = open(log).read()
        if loop == "single":
            # the READ is answered EINTR; a cached read (this one) then asks again, and that
            # finds the connection gone
            assert got["error"] in (errno.EINTR, errno.ECONNABORTED, errno.ENOTCONN), got
            assert "second signal: interrupting the request in progress" in text, text
            assert status != 0 and "KeyboardInterrupt" in text and "run returned" not in text
        else:
            assert status == 0, text
            assert "second signal: ending now; abandoning 1 request(s) in progress: " in text
            assert "run returned" in text


@pytest.mark.timeout(60)
def test_signal_when_idle_ends_at_once(tmp_path: Any) -> None:
    """Nothing in progress: the first signal unmounts at once, without a message."""
    cm, mnt, log = _start(tmp_path, "path", "mt", 0.0)
    with cm as proc:
        assert open(os.path.join(mnt, "f"), "rb").read() == b"hello"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
        assert "in progress" not in open(log).read()
        assert not is_mounted(mnt)


def test_signals_are_the_callers_again_after_run(tmp_path: Any) -> None:
    """After run() returns, SIGINT is Python's again (KeyboardInterrupt)."""
    script = tmp_path / "after.py"
    script.write_text(
        "import os, signal, stat, sys, threading, time, pyfuse\n"
        "class H(pyfuse.Operations):\n"
        "    def getattr(self, path, fh):\n"
        "        return pyfuse.Attr(mode=stat.S_IFDIR | 0o755, nlink=2)\n"
        "threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()\n"
        "print(pyfuse.run(H(), sys.argv[1]), flush=True)\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGINT); time.sleep(5)\n"
        "except KeyboardInterrupt:\n"
        "    print('KeyboardInterrupt')\n")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run([sys.executable, str(script), str(mnt)], capture_output=True, text=True,
                       timeout=30)
    assert r.stdout.split() == ["None", "KeyboardInterrupt"], r.stderr
