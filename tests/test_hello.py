"""The hello example as a daemon: listing, reading, read-only errors, signals, stale mounts."""
from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import time

import pytest

from pyfuse import is_mounted, testing


def test_list_and_read(example, mnt):
    example("hello", mountpoint=mnt)
    assert sorted(os.listdir(mnt)) == ["hello"]
    st = os.stat(os.path.join(mnt, "hello"))
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o444
    assert st.st_size == 13
    with open(os.path.join(mnt, "hello"), "rb") as f:
        assert f.read() == b"Hello World!\n"
    with pytest.raises(FileNotFoundError):
        os.stat(os.path.join(mnt, "nope"))
    # A read-only filesystem: every write says so (EROFS), not EACCES or ENOSYS.
    for attempt in (lambda: open(os.path.join(mnt, "hello"), "r+b"),
                    lambda: open(os.path.join(mnt, "new"), "w"),
                    lambda: os.mkdir(os.path.join(mnt, "d")),
                    lambda: os.chmod(os.path.join(mnt, "hello"), 0o644)):
        with pytest.raises(OSError) as ei:
            attempt()
        assert ei.value.errno == errno.EROFS


def test_help():
    r = subprocess.run(testing.python_module("pyfuse.examples.hello", "--help"),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and "mountpoint" in r.stdout and "--debug" in r.stdout


def test_debug_and_options(example, mnt):
    proc = example("hello", "--debug", "-o", "fsname=hello-demo,ro", mountpoint=mnt)
    open(os.path.join(mnt, "hello")).read()
    with open("/proc/self/mountinfo") as f:
        line = next(x for x in f if f" {mnt} " in x)
    assert "hello-demo" in line and " ro" in line.split(" - ")[0] + " " + line
    deadline = time.monotonic() + 5
    while "LOOKUP" not in open(proc.log).read().upper() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "libfuse:" in open(proc.log).read()  # the request trace goes through the pyfuse logger


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_unmounts_cleanly(example, mnt, sig):
    proc = example("hello", mountpoint=mnt)
    assert open(os.path.join(mnt, "hello")).read() == "Hello World!\n"
    proc.send_signal(sig)
    assert proc.wait(timeout=10) == 0, open(proc.log).read()
    assert not is_mounted(mnt)
    assert "Traceback" not in open(proc.log).read()


def test_fusermount_unmount_ends_daemon(example, mnt):
    proc = example("hello", mountpoint=mnt)
    subprocess.run(["fusermount3", "-u", mnt], check=True)
    assert proc.wait(timeout=10) == 0, open(proc.log).read()


def test_sigkill_then_remount(example, mnt, tmp_path):
    log = tmp_path / "hello.log"
    proc = example("hello", mountpoint=mnt)
    proc.kill()
    proc.wait()
    try:
        with pytest.raises(OSError) as ei:
            os.statvfs(mnt)
        assert ei.value.errno == errno.ENOTCONN  # the stale mount a crash leaves
        with testing.mounted_process(testing.python_module("pyfuse.examples.hello", mnt),
                                     mnt, log=str(log)):
            assert os.listdir(mnt) == ["hello"]
        assert "stale FUSE mount" in log.read_text()
    finally:
        if is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", mnt])


def test_missing_mountpoint(tmp_path):
    r = subprocess.run(testing.python_module("pyfuse.examples.hello", str(tmp_path / "nope")),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "mount point does not exist" in r.stderr, r.stderr


def test_in_process_run_in_thread_needs_no_signals(mnt):
    # pyfuse.run from a non-main thread serves until unmounted and returns.
    import threading

    import pyfuse
    from pyfuse.examples.hello import Hello

    t = threading.Thread(target=pyfuse.run, args=(Hello(), mnt), daemon=True)
    t.start()
    testing.wait_for_mount(mnt, 10)
    assert os.listdir(mnt) == ["hello"]
    pyfuse.unmount(mnt)
    t.join(10)
    assert not t.is_alive()
