"""The reference for the conformance tests: a tmpfs of their own, mounted ``noatime`` (FUSE
filesystems do not see reads served from the page cache, so none keeps access times the way a
local filesystem does; see pyfuse.conformance), unmounted at teardown."""
from __future__ import annotations

import os
import subprocess
import tempfile
from typing import Callable, Iterator

import pytest


@pytest.fixture
def tmpfs() -> Iterator[Callable[[], str]]:
    """tmpfs() -> a new, world-searchable directory on a private noatime tmpfs."""
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


class Account:
    """A user account made for one test: ``name``, ``uid``, primary group ``gid``, and a
    supplementary group ``extra_gid`` (so chgrp by the user has a group it may give)."""

    def __init__(self, name: str, uid: int, gid: int, extra_gid: int) -> None:
        self.name, self.uid, self.gid, self.extra_gid = name, uid, gid, extra_gid

    def become(self) -> None:
        """In a child process: drop root for good, to this account and its groups."""
        os.initgroups(self.name, self.gid)
        os.setresgid(self.gid, self.gid, self.gid)
        os.setresuid(self.uid, self.uid, self.uid)


def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


@pytest.fixture
def account() -> Iterator[Account]:
    """A new unprivileged account (useradd, groupadd), deleted at teardown."""
    import grp
    import pwd

    tag = f"pyfuse{os.getpid()}"
    name, extra = tag, tag + "x"
    for cmd in (["userdel", name], ["groupdel", name], ["groupdel", extra]):  # a crashed run's
        subprocess.run(cmd, capture_output=True)
    _run("groupadd", extra)
    try:
        _run("useradd", "--no-create-home", "--user-group", "--groups", extra,
             "--shell", "/usr/sbin/nologin", name)
        try:
            pw = pwd.getpwnam(name)
            yield Account(name, pw.pw_uid, pw.pw_gid, grp.getgrnam(extra).gr_gid)
        finally:
            _run("userdel", name)  # removes the user's own group with it
    finally:
        _run("groupdel", extra)
