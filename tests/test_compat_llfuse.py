"""pyfuse.compat.llfuse: a filesystem written against llfuse's API (tests/compat_fs/llfs.py)
runs unchanged through ``python -m pyfuse.compat``: listings, reads, errors, and llfuse's
global lock (held in every handler, let go by ``lock_released``, so slow reads overlap).
llfuse's own test suite is run unchanged by ``make test-originals``."""
from __future__ import annotations

import concurrent.futures
import errno
import os
import subprocess
import sys
from typing import Any

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
        for name in ("bad-timeout", "none"):  # refused: EIO, and the log says why
            with pytest.raises(OSError) as ei:
                os.stat(os.path.join(mnt, name))
            assert ei.value.errno == errno.EIO
        log = open(tmp_path / "llfs.log").read()
        assert "entry_timeout=-1" in log
        assert "lookup must return an EntryAttributes, not NoneType" in log


def test_runner_maps_llfuse(tmp_path: Any) -> None:
    script = tmp_path / "p.py"
    script.write_text("import llfuse\nprint(llfuse.__name__, llfuse.get_ino_t_bits())\n")
    r = subprocess.run([sys.executable, "-m", "pyfuse.compat", str(script)],
                       capture_output=True, text=True, timeout=30)
    assert r.stdout.split() == ["pyfuse.compat.llfuse", "64"], r.stderr
