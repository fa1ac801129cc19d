"""Shared fixtures: real mounts only (in-process and as a subprocess), always unmounted, and a log
checker that fails a test on an unexpected ERROR record from the pyfuse logger."""
from __future__ import annotations

import logging
import os
import subprocess
import tempfile
import threading
from typing import Any, Callable, Iterator

import pytest

from pyfuse import testing
from pyfuse.mounts import FUSECTL, _ensure_fusectl

needs_fuse = pytest.mark.skipif(not testing.fuse_available(), reason="/dev/fuse not usable")


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    sanitized = pytest.mark.skip(reason="memory bounds do not hold under AddressSanitizer")
    for item in items:
        if "nofuse" not in item.keywords:
            item.add_marker(needs_fuse)
        if "rss" in item.keywords and os.environ.get("PYFUSE_SANITIZE"):
            item.add_marker(sanitized)


_FUSECTL_WAS_MOUNTED = os.path.exists(FUSECTL) and bool(os.listdir(FUSECTL))


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    """Leave the machine as found: unmount fusectl if the watchdog mounted it."""
    if not _FUSECTL_WAS_MOUNTED and os.path.ismount(FUSECTL):
        subprocess.run(["umount", FUSECTL], capture_output=True)


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "nofuse: runs without /dev/fuse (build smoke tests)")
    config.addinivalue_line("markers", "rss: bounds a process's memory; skipped under "
                            "`make test-sanitize` (PYFUSE_SANITIZE=1), where ASan's quarantine "
                            "and shadow memory decide RSS")
    config.addinivalue_line("markers", "expect_errors: the test expects ERROR log records")
    config.addinivalue_line("markers", "dev: needs the dev extra (ruff, mypy, build); "
                            "deselect with -m 'not dev' when only the test extra is installed")


@pytest.fixture(autouse=True)
def pyfuse_log_check(request: Any, caplog: Any) -> Iterator[None]:
    """Fail a test on an ERROR record from the pyfuse logger unless marked expect_errors."""
    caplog.set_level(logging.INFO, logger="pyfuse")
    yield
    if request.node.get_closest_marker("expect_errors"):
        return
    errors = [r for r in caplog.get_records("call") if r.name == "pyfuse"
              and r.levelno >= logging.ERROR]
    if errors:
        pytest.fail("unexpected error log from pyfuse:\n" +
                    "\n".join(caplog.text.splitlines()[-40:]))


WATCHDOG_SECONDS = 45  # before pytest-timeout's 60 s: unblock, then let the test fail normally


def _connections() -> set[str]:
    try:
        return set(os.listdir(FUSECTL))
    except OSError:
        return set()


@pytest.fixture(autouse=True)
def hung_mount_watchdog(request: Any) -> Iterator[None]:
    """A request that never gets an answer blocks the test in the kernel, where no timeout can
    interrupt it. Shortly before the test's own timeout (15 s before; WATCHDOG_SECONDS for the
    default 60 s), abort every FUSE connection this test created: the blocked calls then fail
    (ENOTCONN) and the test fails instead of hanging CI."""
    marker = request.node.get_closest_marker("timeout")
    limit = float(marker.args[0]) if marker and marker.args else 60.0
    delay = max(limit - 15.0, WATCHDOG_SECONDS if limit <= 60 else 5.0)
    _ensure_fusectl()
    before = _connections()
    fired = threading.Event()

    def fire() -> None:
        fired.set()
        for c in _connections() - before:
            try:
                with open(os.path.join(FUSECTL, c, "abort"), "w") as f:
                    f.write("1")
            except OSError:
                pass

    timer = threading.Timer(delay, fire)
    timer.daemon = True
    timer.start()
    yield
    timer.cancel()
    if fired.is_set():
        pytest.fail(f"the test still waited on a FUSE mount after {delay:.0f}s; its connections "
                    f"were aborted")


@pytest.fixture
def mnt(tmp_path: Any) -> str:
    path = tmp_path / "mnt"
    path.mkdir()
    return str(path)


@pytest.fixture
def mount_ops(mnt: str) -> Iterator[Callable[..., Any]]:
    """mount_ops(ops, **kwargs) mounts ops in-process at ``mnt``; unmounted at teardown."""
    stack: list[Any] = []

    def _mount(ops: Any, **kwargs: Any) -> Any:
        cm = testing.mounted(ops, mnt, **kwargs)
        session = cm.__enter__()
        stack.append(cm)
        return session

    yield _mount
    while stack:
        stack.pop().__exit__(None, None, None)


@pytest.fixture
def example(tmp_path: Any) -> Iterator[Callable[..., Any]]:
    """example(name, *args, mountpoint=...) runs pyfuse.examples.name as a daemon and waits
    for its mount; the daemon is stopped and the mount removed at teardown."""
    stack: list[Any] = []

    def _run(name: str, *args: str, mountpoint: str) -> subprocess.Popen[Any]:
        log = str(tmp_path / f"{name}.log")
        cm = testing.mounted_process(
            testing.python_module(f"pyfuse.examples.{name}", *args, mountpoint), mountpoint,
            log=log)
        proc = cm.__enter__()
        proc.log = log  # type: ignore[attr-defined]
        stack.append(cm)
        return proc

    yield _run
    while stack:
        stack.pop().__exit__(None, None, None)


@pytest.fixture(params=["memory", "memory_ll", "passthrough"])
def data_fs(request: Any, example: Any, tmp_path: Any) -> str:
    """The memory example (path API, then inode API), then the passthrough example (over a
    fresh source directory), mounted; yields the mount point."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if request.param in ("memory", "memory_ll"):
        example(request.param, mountpoint=str(mnt))
    else:
        src = tmp_path / "src"
        src.mkdir()
        example("passthrough", str(src), mountpoint=str(mnt))
    return str(mnt)


@pytest.fixture
def tmpfs() -> Iterator[Callable[[], str]]:
    """tmpfs() -> a new, world-searchable directory on a tmpfs of the test's own, mounted
    ``noatime`` (FUSE filesystems are not told of reads served from the page cache, so none
    keeps access times as a local filesystem does; see pyfuse.conformance); unmounted at
    teardown. The reference for the comparisons with tmpfs."""
    top = tempfile.mkdtemp(prefix="pyfuse-tmpfs-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "noatime,size=512m,mode=0755", "tmpfs", top],
                   check=True)
    count = 0

    def make() -> str:
        nonlocal count
        count += 1
        d = os.path.join(top, f"d{count}")
        os.mkdir(d, 0o755)
        return d

    try:
        yield make
    finally:
        subprocess.run(["umount", "-l", top], check=False)
        os.rmdir(top)
