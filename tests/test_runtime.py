"""What mounting needs from the machine at run time, said in one line when it is missing: the
kernel's /dev/fuse, and for a user who is not root the setuid fusermount3 (Debian's fuse3).
libfuse itself is pyfuse's own (the binary wheel bundles it), so neither case may end in an
ImportError or a libfuse message. Each case runs the hello example in a mount namespace of its
own (unshare) where the machine lacks that piece."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any

import pytest

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                       reason="needs root and unshare(1) for a mount namespace"),
]
HELLO = [sys.executable, "-m", "pyfuse.examples.hello"]


def _one_line(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode != 0
    assert "Traceback" not in r.stderr and "ImportError" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def test_without_dev_fuse(tmp_path: Any) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                        'mount -t tmpfs none /dev && exec "$@"', "sh", *HELLO, str(mnt)],
                       capture_output=True, text=True)
    line = _one_line(r)
    assert "/dev/fuse does not exist" in line and "modprobe fuse" in line, line
    assert str(mnt) in line


def test_user_without_fusermount3() -> None:
    """A user who is not root (a user namespace of its own: this process's files stay
    readable, and it is uid 65534 there), on a machine without fusermount3 (hidden by a bind
    mount of /dev/null over it and a PATH without it)."""
    mnt = tempfile.mkdtemp(prefix="pyfuse-nofusermount-")
    try:
        hide = " && ".join(f"mount --bind /dev/null {p}" for p in
                           {shutil.which("fusermount3"), "/usr/bin/fusermount3"}
                           if p and os.path.exists(p))
        r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                            f'{hide or "true"} && exec unshare --user env PATH=/nonexistent '
                            '"$@"', "sh", *HELLO, mnt], capture_output=True, text=True)
        line = _one_line(r)
        assert "needs fusermount3" in line and "apt-get install fuse3" in line, line
    finally:
        os.rmdir(mnt)
