"""Permission semantics against tmpfs: the memory example mounted by root with allow_other and
default_permissions, the operations made by an unprivileged user (a child process that drops to
uid/gid 54321 with setresuid; no account is needed for a numeric id): sticky directories, files
of other users, setuid/setgid clearing on write and chown, O_CREAT modes under a umask."""
from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
import traceback
from typing import Any, Iterator

import pytest

pytest.importorskip("hypothesis")

from pyfuse.conformance import check_against  # noqa: E402

UID = GID = 54321
EXTRA = ["../shared/rootfile", "../shared/userfile", "../shared", "../private/file",
         "../shared/setuid"]


def _prepare(root: str) -> None:
    """As root: a sticky world-writable directory with files of root and of the user, and a
    directory the user may not enter."""
    os.chmod(root, 0o1777)
    shared = os.path.join(root, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    for name, owner, mode in (("rootfile", 0, 0o666), ("userfile", UID, 0o644),
                              ("setuid", UID, 0o6755)):
        p = os.path.join(shared, name)
        with open(p, "w") as f:
            f.write("data")
        os.chown(p, owner, owner)
        os.chmod(p, mode)
    private = os.path.join(root, "private")
    os.mkdir(private, 0o700)
    with open(os.path.join(private, "file"), "w"):
        pass


def _child(ref: str, sub: str, examples: int, q: Any) -> None:
    try:
        os.setgroups([])
        os.setresgid(GID, GID, GID)
        os.setresuid(UID, UID, UID)
        os.umask(0o027)
        check_against(ref, sub, max_examples=examples, steps=30, extra_paths=EXTRA)
        q.put(None)
    except BaseException:
        q.put(traceback.format_exc())


@pytest.fixture
def open_mountpoint() -> Iterator[str]:
    """A mount point the unprivileged user can reach (pytest's tmp_path is root-only); removed
    after the mount (requested before ``example``, so torn down after it)."""
    d = tempfile.mkdtemp(prefix="pyfuse-perm-")
    os.chmod(d, 0o755)
    yield d
    os.rmdir(d)


@pytest.mark.timeout(600)
def test_unprivileged_user_matches_tmpfs(open_mountpoint: str, example: Any) -> None:
    mnt = open_mountpoint
    example("memory", "-o", "allow_other", mountpoint=mnt)
    ref = tempfile.mkdtemp(prefix="pyfuse-perm-", dir="/dev/shm")
    try:
        _prepare(ref)
        _prepare(mnt)
        examples = int(os.environ.get("PYFUSE_CONFORMANCE_EXAMPLES", "40"))
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=_child, args=(ref, mnt, examples, q))
        p.start()
        result = q.get(timeout=500)
        p.join(30)
        assert result is None, result
    finally:
        shutil.rmtree(ref, ignore_errors=True)
