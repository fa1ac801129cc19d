"""Permission semantics against tmpfs: the memory example mounted by root with allow_other and
default_permissions, the operations made by an unprivileged account the test creates (a child
process that drops to it with initgroups and setresuid): sticky directories, files of other
users, a directory it may not enter, chown and chgrp (to its own supplementary group and to
others'), setuid/setgid clearing on write and chown, O_CREAT modes under a umask."""
from __future__ import annotations

import multiprocessing
import os
import tempfile
import traceback
from typing import Any, Callable, Iterator

import pytest

pytest.importorskip("hypothesis")

from pyfuse.conformance import check_against  # noqa: E402

EXTRA = ["../shared/rootfile", "../shared/userfile", "../shared", "../private/file",
         "../shared/setuid", "../shared/setgid"]


def _prepare(root: str, user: Any) -> None:
    """As root: a sticky world-writable directory with files of root and of the user, and a
    directory the user may not enter."""
    os.chmod(root, 0o1777)
    shared = os.path.join(root, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    for name, uid, gid, mode in (("rootfile", 0, 0, 0o666),
                                 ("userfile", user.uid, user.gid, 0o644),
                                 ("setuid", user.uid, user.gid, 0o6755),
                                 ("setgid", user.uid, user.extra_gid, 0o2775)):
        p = os.path.join(shared, name)
        with open(p, "w") as f:
            f.write("data")
        os.chown(p, uid, gid)
        os.chmod(p, mode)
    private = os.path.join(root, "private")
    os.mkdir(private, 0o700)
    with open(os.path.join(private, "file"), "w"):
        pass


def _child(user: Any, ref: str, sub: str, examples: int, q: Any) -> None:
    try:
        user.become()
        os.umask(0o027)
        check_against(ref, sub, max_examples=examples, steps=30, extra_paths=EXTRA,
                      uids=(0, user.uid), gids=(0, user.gid, user.extra_gid))
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
def test_unprivileged_user_matches_tmpfs(account: Any, tmpfs: Callable[[], str],
                                         open_mountpoint: str, example: Any) -> None:
    mnt = open_mountpoint
    example("memory", "-o", "allow_other", mountpoint=mnt)
    ref = tmpfs()
    _prepare(ref, account)
    _prepare(mnt, account)
    examples = int(os.environ.get("PYFUSE_CONFORMANCE_EXAMPLES", "40"))
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(account, ref, mnt, examples, q))
    p.start()
    result = q.get(timeout=500)
    p.join(30)
    assert result is None, result
