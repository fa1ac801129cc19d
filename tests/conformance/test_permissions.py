"""Permission semantics against tmpfs: the memory example mounted by root with allow_other and
default_permissions, the operations made by an unprivileged account the test creates (a child
process that becomes it with initgroups and setresuid, keeping root as its saved set-user-ID to
make the shared files afresh before every sequence): sticky directories, files of other
users, a directory it may not enter, chown and chgrp (to its own supplementary group and to
others'), setuid/setgid clearing on write and chown, O_CREAT modes under a umask."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import multiprocessing
import os
import pkgutil
import shutil
import stat
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Iterator

import pytest

pytest.importorskip("hypothesis")

from pyfuse.conformance import check_against, make_machine, outcome, renameat2  # noqa: E402


def _import_everything_the_child_needs() -> None:
    """The child that becomes the test account may not be able to read this checkout or its
    venv (a clone in /root, which is 0700): import here, as root, every module it could import
    later (hypothesis imports parts of itself lazily, some only when it reports a failure)."""
    import hypothesis

    for m in pkgutil.walk_packages(hypothesis.__path__, "hypothesis."):
        if ".extra." in m.name or m.name.endswith(".extra") or "vendor" in m.name:
            continue  # optional integrations (numpy, django, ...) that need other packages
        try:
            importlib.import_module(m.name)
        except Exception:  # noqa: BLE001  (a module needing something not installed)
            pass
    # hypothesis seeds numpy's generator when numpy is installed (make bench brings it)
    if importlib.util.find_spec("numpy") is not None:
        importlib.import_module("numpy.random")


_import_everything_the_child_needs()


class _NoImportsAsUser(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        raise ImportError(f"{name} was first imported after the child became the test account, "
                          "which may not be able to read it (a checkout in /root); import it "
                          "in _import_everything_the_child_needs")

EXTRA = ["../shared/rootfile", "../shared/userfile", "../shared", "../private/file",
         "../shared/setuid", "../shared/setgid"]


def _prepare(root: str, user: Any) -> None:
    """As root, before every run: a sticky world-writable directory with files of root and of
    the user, and a directory the user may not enter (made afresh; the last run changed them)."""
    os.chmod(root, 0o1777)
    shared = os.path.join(root, "shared")
    for d in (shared, os.path.join(root, "private")):
        shutil.rmtree(d, ignore_errors=True)
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


def _as_user(user: Any, ref: str, sub: str, work: Callable[[Callable[[], None]], None],
             q: Any) -> None:
    """In a child process: become the user (umask 027) and run ``work(prepare)``, where
    ``prepare`` makes the shared files afresh on both sides; put None or the traceback."""
    def prepare() -> None:
        with user.as_root():
            _prepare(ref, user)
            _prepare(sub, user)

    try:
        user.become()
        # Whether or not this checkout is readable by the account here, behave as if it were
        # not (a clone in /root): a module first imported after this point fails the test.
        sys.meta_path.insert(0, _NoImportsAsUser())
        os.umask(0o027)
        work(prepare)
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


@pytest.fixture(params=["memory", "memory_ll", "passthrough"])
def as_user(request: Any, account: Any, tmpfs: Callable[[], str], open_mountpoint: str,
            example: Any) -> Callable[[Callable[..., None]], None]:
    """Mount the memory example (allow_other), or the passthrough example over a tmpfs
    directory as its docstring says (allow_other, default_permissions), and a reference tmpfs;
    the returned function runs ``work(ref, sub, user, prepare)`` as the account in a child
    process and fails the test with the child's traceback."""
    if request.param in ("memory", "memory_ll"):
        example(request.param, "-o", "allow_other", mountpoint=open_mountpoint)
    else:
        source = tmpfs()
        os.chmod(source, 0o755)
        example("passthrough", source, "-o", "allow_other,default_permissions",
                mountpoint=open_mountpoint)
    ref = tmpfs()

    def run(work: Callable[..., None]) -> None:
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=_as_user, args=(
            account, ref, open_mountpoint,
            lambda prepare: work(ref, open_mountpoint, account, prepare), q))
        p.start()
        result = q.get(timeout=500)
        p.join(30)
        assert result is None, result
    run.param = request.param  # type: ignore[attr-defined]
    return run


@pytest.mark.timeout(600)
def test_unprivileged_user_matches_tmpfs(as_user: Any) -> None:
    examples = int(os.environ.get("PYFUSE_CONFORMANCE_EXAMPLES", "40"))

    def work(ref: str, sub: str, user: Any, prepare: Callable[[], None]) -> None:
        check_against(ref, sub, max_examples=examples, steps=30, extra_paths=EXTRA,
                      uids=(0, user.uid), gids=(0, user.gid, user.extra_gid), prepare=prepare)
    as_user(work)


@pytest.mark.timeout(120)
def test_rename_between_hard_links_in_sticky_dir(as_user: Any) -> None:
    """The one rename the comparison leaves out (found in CI): the user links root's file to a
    second name in the sticky directory and renames one name onto the other. tmpfs does nothing
    and succeeds; on FUSE the kernel sees two inodes and refuses (EPERM) before asking the
    filesystem. The machine must step over it and find both sides alike afterwards. (The
    inode API's memory example has one kernel inode for both names: it behaves as tmpfs.)"""
    same_inode = as_user.param == "memory_ll"  # type: ignore[attr-defined]

    def work(ref: str, sub: str, user: Any, prepare: Callable[[], None]) -> None:
        m = make_machine(ref, sub, extra_paths=EXTRA, prepare=prepare)()
        try:
            m.unlink("../shared/setgid")
            m.link("../shared/rootfile", "../shared/setgid")
            results = [outcome(renameat2, os.path.join(r, "shared/rootfile"),
                               os.path.join(r, "shared/setgid"), 0) for r in (ref, sub)]
            if same_inode:  # the inode API: one kernel inode for both names, as tmpfs
                assert results == [("ok", None), ("ok", None)], results
            else:
                assert results == [("ok", None), ("err", "EPERM")], results  # libfuse's limit
            m.rename("../shared/rootfile", "../shared/setgid", 0)
            m.every_path_alike()
        finally:
            m.teardown()
    as_user(work)


def test_same_size_truncate_of_a_setuid_file(as_user: Any) -> None:
    """Left out of the comparison (found in CI): the user truncates its own setuid file to its
    own size. Both sides clear the setuid bit; tmpfs keeps ctime, the FUSE side (a chmod and a
    truncate through libfuse's high-level API) stamps it. The machine must step over it and
    find both sides alike afterwards."""
    def work(ref: str, sub: str, user: Any, prepare: Callable[[], None]) -> None:
        m = make_machine(ref, sub, extra_paths=EXTRA, prepare=prepare)()
        try:
            # the limit itself, on a file the machine does not compare
            for r in (ref, sub):
                os.close(os.open(os.path.join(r, "t"), os.O_CREAT | os.O_WRONLY, 0o4750))
            before = [os.lstat(os.path.join(r, "t")).st_ctime_ns for r in (ref, sub)]
            time.sleep(0.02)  # beyond the coarse clock's tick
            for r in (ref, sub):
                os.truncate(os.path.join(r, "t"), 0)
            after = [os.lstat(os.path.join(r, "t")) for r in (ref, sub)]
            assert [stat.S_IMODE(a.st_mode) for a in after] == [0o750, 0o750]
            assert [a.st_ctime_ns == b for a, b in zip(after, before)] == [True, False]
            # the machine: open(O_CREAT, setuid) then truncate to the same size, as in CI
            m.open_file("a", os.O_RDONLY, os.O_CREAT, 0o4755)
            m.every_path_alike()
            m.truncate("a", 0)
            m.every_path_alike()
        finally:
            m.teardown()
    as_user(work)
