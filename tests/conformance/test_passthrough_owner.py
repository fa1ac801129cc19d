"""The passthrough example, mounted by root for other users as its docstring says
(allow_other, default_permissions): what a user creates belongs to that user and has the mode
that user asked for under its umask, in the mount and in the source below it (it used to
belong to root, with the daemon's umask applied a second time)."""
from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from typing import Any, Iterator

import pytest

from pyfuse import testing


@pytest.fixture
def open_dirs() -> Iterator[tuple[str, str]]:
    src = tempfile.mkdtemp(prefix="pyfuse-pt-src-")
    mnt = tempfile.mkdtemp(prefix="pyfuse-pt-mnt-")
    os.chmod(src, 0o1777)
    os.chmod(mnt, 0o755)
    yield src, mnt
    subprocess.run(["rm", "-rf", src], check=False)
    os.rmdir(mnt)


@pytest.mark.parametrize("umask", [0o000, 0o027])
def test_user_owns_what_it_creates(account: Any, open_dirs: tuple[str, str], umask: int) -> None:
    src, mnt = open_dirs
    argv = testing.python_module("pyfuse.examples.passthrough", src, mnt, "-o",
                                 "allow_other,default_permissions")
    with testing.mounted_process(argv, mnt):
        script = (f"umask {umask:03o} && touch {mnt}/f && mkdir {mnt}/d && "
                  f"ln -s f {mnt}/l && mkfifo {mnt}/p")
        r = subprocess.run(["sh", "-c", script], user=account.uid, group=account.gid,
                           extra_groups=[], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        for root in (mnt, src):
            for name, mode in (("f", 0o666), ("d", 0o777), ("p", 0o666)):
                st = os.lstat(os.path.join(root, name))
                assert (st.st_uid, st.st_gid) == (account.uid, account.gid), (root, name)
                assert stat.S_IMODE(st.st_mode) == mode & ~umask, (root, name, oct(st.st_mode))
            assert os.lstat(os.path.join(root, "l")).st_uid == account.uid
