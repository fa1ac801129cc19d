"""The conformance tests' account fixture (their reference directories come from the ``tmpfs``
fixture in tests/conftest.py)."""
from __future__ import annotations

import os
import subprocess
from contextlib import contextmanager
from typing import Iterator

import pytest


class Account:
    """A user account made for one test: ``name``, ``uid``, primary group ``gid``, and a
    supplementary group ``extra_gid`` (so chgrp by the user has a group it may give)."""

    def __init__(self, name: str, uid: int, gid: int, extra_gid: int) -> None:
        self.name, self.uid, self.gid, self.extra_gid = name, uid, gid, extra_gid

    def become(self) -> None:
        """In a child process: become this account, with its groups and no capabilities.
        Root stays the saved set-user-ID (as in a set-user-ID program), so that ``as_root``
        can return to it for a moment."""
        os.initgroups(self.name, self.gid)
        os.setresgid(self.gid, self.gid, 0)
        os.setresuid(self.uid, self.uid, 0)

    @contextmanager
    def as_root(self) -> Iterator[None]:
        """After ``become``: effective user and group root (capabilities back) for a block."""
        os.setresuid(-1, 0, -1)
        os.setresgid(-1, 0, -1)
        try:
            yield
        finally:
            os.setresgid(-1, self.gid, -1)
            os.setresuid(-1, self.uid, -1)


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
