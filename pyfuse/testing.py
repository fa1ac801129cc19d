"""Helpers for testing filesystems on real mounts (used by pyfuse's own tests; public).

``fuse_available()`` tells whether this machine can mount; ``mounted()`` mounts an Operations
object in-process; ``mounted_process()`` runs a daemon command (e.g. an example) and waits for its
mount; ``wait_for_mount()`` polls /proc/self/mountinfo. Every helper unmounts on the way out,
even when the body fails, and kills a daemon that does not exit.
"""
from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Iterator, Optional, Sequence

from .mounts import fuse_device, is_mounted, unmount
from .operations import Operations
from .session import Session, mount


def _live_mount(mountpoint: str) -> bool:
    """A FUSE mount is at ``mountpoint`` and answers: statvfs reaches the daemon (stat may come
    from the attribute cache; a stale mount fails with ENOTCONN) and the path resolves to that
    FUSE mount, not to the directory underneath while an old mount is being replaced."""
    try:
        os.statvfs(mountpoint)
    except OSError as e:
        if e.errno in (errno.ENOTCONN, errno.ECONNABORTED):
            return False  # any other answer means the daemon is alive
    try:
        st = os.stat(mountpoint)
    except OSError:
        return False
    return fuse_device(mountpoint) == f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"


class DaemonDied(RuntimeError):
    """The filesystem daemon exited before (or instead of) mounting; carries its output."""


def fuse_available() -> bool:
    """True when /dev/fuse can be opened and fusermount3 is installed."""
    if shutil.which("fusermount3") is None:
        return False
    try:
        fd = os.open("/dev/fuse", os.O_RDWR)
    except OSError:
        return False
    os.close(fd)
    return True


def _tail(path: Optional[str]) -> str:
    if not path:
        return ""
    with open(path, errors="replace") as f:
        return f.read()[-4000:]


def wait_for_mount(mountpoint: str, timeout: float = 10.0,
                   proc: Optional[subprocess.Popen[Any]] = None,
                   log: Optional[str] = None) -> None:
    """Wait until a live FUSE filesystem is mounted at ``mountpoint`` (a stale mount left by a
    dead daemon does not count). Fails fast with the daemon's output (``log``) if ``proc``
    exits first; raises TimeoutError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not _live_mount(mountpoint):
        if proc is not None and proc.poll() is not None:
            raise DaemonDied(f"daemon exited with {proc.returncode} before mounting:\n"
                             f"{_tail(log)}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{mountpoint} not mounted after {timeout}s\n{_tail(log)}")
        time.sleep(0.01)


@contextlib.contextmanager
def mounted(ops: Any, mountpoint: Optional[str] = None, **kwargs: Any) -> Iterator[Session]:
    """Mount ``ops`` in this process (a background thread serves it); yields the Session, whose
    ``mountpoint`` attribute is the path. A temporary mount point is made when none is given.

    The test is a client in the serving process: it must not enter the mount while holding
    the GIL (``mmap``; on Python 3.9 and 3.10 ``os.DirEntry.stat()``) or it deadlocks; use
    ``os.lstat(entry.path)``, or :func:`mounted_process` for such clients."""
    tmp = None
    if mountpoint is None:
        tmp = mountpoint = tempfile.mkdtemp(prefix="pyfuse-test-")
    mount_ = mount
    if not isinstance(ops, Operations):
        from . import lowlevel

        if isinstance(ops, lowlevel.Operations):
            mount_ = lowlevel.mount  # type: ignore[assignment]
    try:
        with mount_(ops, mountpoint, **kwargs) as session:
            yield session
    finally:
        if is_mounted(mountpoint):
            unmount(mountpoint, lazy=True)
        if tmp is not None:
            os.rmdir(tmp)


@contextlib.contextmanager
def mounted_process(argv: Sequence[str], mountpoint: str, timeout: float = 10.0,
                    log: Optional[str] = None, env: Optional[dict[str, str]] = None
                    ) -> Iterator[subprocess.Popen[Any]]:
    """Start a daemon (``argv``, e.g. ``[sys.executable, "-m", "pyfuse.examples.hello", mnt]``)
    that mounts at ``mountpoint``; yield the Popen once mounted. On exit: ``fusermount3 -u`` and
    wait; if that fails (or the body raised), lazy unmount and terminate/kill the daemon."""
    own_log = log is None
    if own_log:
        fd, log = tempfile.mkstemp(prefix="pyfuse-daemon-", suffix=".log")
        os.close(fd)
    assert log is not None
    with open(log, "ab") as out:
        proc = subprocess.Popen(list(argv), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env)
    clean = False
    try:
        wait_for_mount(mountpoint, timeout, proc, log)
        yield proc
        clean = True
    finally:
        _stop(proc, mountpoint, clean)
        if own_log:
            os.unlink(log)


def _stop(proc: subprocess.Popen[Any], mountpoint: str, clean: bool) -> None:
    if clean and is_mounted(mountpoint):
        r = subprocess.run(["fusermount3", "-u", mountpoint], capture_output=True)
        if r.returncode == 0:
            try:
                proc.wait(timeout=10)
                return
            except subprocess.TimeoutExpired:
                pass
    if is_mounted(mountpoint):
        subprocess.run(["fusermount3", "-u", "-z", mountpoint], capture_output=True)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def python_module(name: str, *args: str) -> list[str]:
    """argv to run ``python -m name args...`` with this interpreter."""
    return [sys.executable, "-m", name, *args]


def check_against(reference: str, subject: str, max_examples: int = 50, steps: int = 50,
                  **kwargs: Any) -> None:
    """Differential conformance: random operation sequences on ``reference`` (say, a tmpfs
    directory) and ``subject`` (a directory of your mount) must give identical results. See
    :func:`pyfuse.conformance.check_against` (needs hypothesis)."""
    from .conformance import check_against as run

    run(reference, subject, max_examples=max_examples, steps=steps, **kwargs)
