"""Differential conformance testing: the same random operations on a reference directory (for
example on tmpfs) and on a directory of the filesystem under test, with identical results
required: return values, errno, file contents, directory listings, extended attributes and the
stat fields that do not depend on the filesystem's layout (type and permission bits, nlink, uid,
gid, the size of files and symbolic links) and the times.

Times are compared by when they were set, not by their values, which two filesystems cannot
share: between steps the machine waits until the kernel's coarse clock has passed the moment it
noted, and a time that falls into the run counts as "set by step k", any other time (one given to
utimensat) as itself. Both sides must then agree, for atime, mtime and ctime of every path after
every step, on which step last set each one (so also on their order: ``mtime <= ctime`` after a
write, ctime alone after chmod, link or rename, the parent's times after a create). FUSE
filesystems do not see reads served from the kernel's page cache, so they cannot keep access
times the way a local filesystem does: mount the reference with ``noatime`` (as tests/conformance
does), or pass ``atime=False``.

    from pyfuse.conformance import check_against
    check_against("/mnt/noatime-tmpfs/ref", "/mnt/myfs", max_examples=50, steps=60)

Needs hypothesis (``pip install hypothesis``). A failure is shrunk by hypothesis to a short
sequence of operations and reported with the first differing result; tests/conformance/ runs it
on the memory and passthrough examples.
"""
from __future__ import annotations

import ctypes
import errno
import itertools
import os
import shutil
import stat
import time
from bisect import bisect_right
from typing import Any, Callable, Optional, Sequence

PATHS = ["a", "b", "c", "a/b", "a/c", "b/a", "c/a/b"]
ACCESS = [os.O_RDONLY, os.O_WRONLY, os.O_RDWR]
EXTRA = [0, os.O_CREAT, os.O_CREAT | os.O_EXCL, os.O_TRUNC, os.O_APPEND, os.O_CREAT | os.O_TRUNC,
         os.O_CREAT | os.O_APPEND]
MODES = [0o644, 0o600, 0o755, 0o4755, 0o2775, 0o1777, 0o000]
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2
UTIME_NOW, UTIME_OMIT = (1 << 30) - 1, (1 << 30) - 2
_AT_FDCWD, _AT_SYMLINK_NOFOLLOW = -100, 0x100
_libc = ctypes.CDLL(None, use_errno=True)
_counter = itertools.count()


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _check(rc: int) -> None:
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def renameat2(old: str, new: str, flags: int) -> None:
    _check(_libc.renameat2(_AT_FDCWD, os.fsencode(old), _AT_FDCWD, os.fsencode(new), flags))


def utimensat(path: str, atime: Optional[int], mtime: Optional[int]) -> None:
    """Set times in ns; None leaves one alone (UTIME_OMIT), -1 means now (UTIME_NOW)."""
    def ts(v: Optional[int]) -> _Timespec:
        if v is None:
            return _Timespec(0, UTIME_OMIT)
        if v < 0:
            return _Timespec(0, UTIME_NOW)
        return _Timespec(v // 10**9, v % 10**9)
    times = (_Timespec * 2)(ts(atime), ts(mtime))
    _check(_libc.utimensat(_AT_FDCWD, os.fsencode(path), times, _AT_SYMLINK_NOFOLLOW))


def summary(st: os.stat_result) -> tuple[Any, ...]:
    """The stat fields compared: every filesystem that behaves like tmpfs agrees on these."""
    sized = stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)
    return (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_nlink, st.st_uid,
            st.st_gid, st.st_size if sized else None)


def _kills_privs(mode: int) -> bool:
    """Whether a write by a caller without CAP_FSETID clears bits of this mode."""
    return bool(mode & stat.S_ISUID) or mode & (stat.S_ISGID | stat.S_IXGRP) == (
        stat.S_ISGID | stat.S_IXGRP)


_COARSE = getattr(time, "CLOCK_REALTIME_COARSE", 5)  # Linux's clock id 5


class StepClock:
    """Tells which step of a run set a time. ``mark()`` is called between steps: it notes the
    time, then waits until the kernel's coarse clock (from which tmpfs stamps times; it lags real
    time by up to a tick) has passed it, so that every time stamped in the next step, coarse or
    fine, falls after the mark, while every time of the steps before falls before it."""

    def __init__(self) -> None:
        self.start = time.time_ns() - 3600 * 10**9
        self.marks: list[int] = []
        self.nap = time.clock_getres(_COARSE) / 4
        self.mark()

    def mark(self) -> None:
        m = time.time_ns()
        self.marks.append(m)
        while time.clock_gettime_ns(_COARSE) <= m:
            time.sleep(self.nap)

    def classify(self, ns: int) -> tuple[str, int]:
        """("step", k) for a time set during step k of this run (0: before the first step, or
        up to an hour before the run, for paths the caller prepared), ("set", ns) otherwise."""
        if self.start <= ns <= time.time_ns() + 10**9:
            return "step", bisect_right(self.marks, ns)
        return "set", ns


def outcome(fn: Callable[..., Any], *args: Any, clock: Optional[StepClock] = None,
            atime: bool = True) -> tuple[str, Any]:
    """("ok", comparable result) or ("err", errno name). A stat result becomes its
    ``summary``, plus the step classes of (atime,) mtime and ctime when ``clock`` is given."""
    try:
        r = fn(*args)
    except OSError as e:
        return "err", errno.errorcode.get(e.errno or 0, e.errno)
    if isinstance(r, os.stat_result):
        st = r
        r = summary(st)
        if clock is not None:
            times = (st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns)[0 if atime else 1:]
            r += tuple(clock.classify(t) for t in times)
    elif isinstance(r, list):
        r = sorted(r)
    elif isinstance(r, os.statvfs_result):
        r = None  # sizes differ by nature; only success is compared
    return "ok", r


def _two_names_of_one_file(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are different directory entries (hard links) of one file."""
    try:
        sa, sb = os.lstat(a), os.lstat(b)
        if not os.path.samestat(sa, sb):
            return False
        return not (os.path.basename(a) == os.path.basename(b) and os.path.samestat(
            os.stat(os.path.dirname(a)), os.stat(os.path.dirname(b))))
    except OSError:
        return False


def make_machine(ref_root: str, sub_root: str, extra_paths: Sequence[str] = (),
                 atime: bool = True, uids: Sequence[int] = (0, 1000),
                 gids: Sequence[int] = (0, 100),
                 prepare: Optional[Callable[[], None]] = None) -> type:
    """A hypothesis RuleBasedStateMachine comparing ``sub_root`` with ``ref_root``. Each run
    works in a fresh directory under both roots; ``extra_paths`` (relative to that directory,
    e.g. ``"../shared/file"``) add paths prepared by the caller to the ones it uses, and
    ``prepare``, called before every run, makes them afresh (else what one run did to them
    carries over into the next, and hypothesis cannot replay a failure).
    ``atime=False`` leaves access times out (see the module docstring); chown picks from
    ``uids`` and ``gids`` (and -1, no change)."""
    from hypothesis import strategies as st
    from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

    paths = st.sampled_from(PATHS + list(extra_paths))
    data = st.binary(max_size=5000) | st.integers(0, 70_000).map(lambda n: b"z" * n)
    offsets = st.sampled_from([0, 1, 4095, 4096, 10_000, 65_536, 131_073, 1 << 20])
    names = st.sampled_from(["user.a", "user.b", "user.long" + "x" * 100])
    times = st.none() | st.just(-1) | st.integers(0, 2**33 * 10**9)

    class Differential(RuleBasedStateMachine):
        fds = Bundle("fds")

        def __init__(self) -> None:
            super().__init__()
            if prepare is not None:
                prepare()
            top = f"t{os.getpid()}-{next(_counter)}"
            self.clock = StepClock()
            self.roots = (os.path.join(ref_root, top), os.path.join(sub_root, top))
            for r in self.roots:
                os.mkdir(r)
            self.open: list[tuple[int, int, str]] = []
            self.last = "the start"  # the last operation, for messages

        def both(self, fn: Callable[..., Any], *rel: str, extra: tuple[Any, ...] = ()
                 ) -> tuple[str, Any]:
            results = [outcome(fn, *(os.path.join(r, p) for p in rel), *extra)
                       for r in self.roots]
            assert results[0] == results[1], \
                f"{fn.__name__}{rel + extra}: reference {results[0]}, subject {results[1]}"
            self.last = fn.__name__  # the invariant compares the paths it touched
            return results[0]

        def same_lstat(self, path: str, after: str) -> None:
            a, b = (outcome(os.lstat, os.path.join(r, path), clock=self.clock, atime=atime)
                    for r in self.roots)
            assert a == b, f"lstat({path}) after {after}: reference {a}, subject {b} " \
                f"(times: ('step', k) = set by step k)"

        @invariant()
        def every_path_alike(self) -> None:
            """After every step, every path (and the run's directory) looks the same, times
            included; then the step clock moves on."""
            for p in ["", *PATHS, *extra_paths]:
                self.same_lstat(p, f"{self.last} (step {len(self.clock.marks)})")
            self.clock.mark()

        def teardown(self) -> None:
            for fa, fb, _ in self.open:
                os.close(fa)
                os.close(fb)
            for r in self.roots:
                shutil.rmtree(r, ignore_errors=True)

        @rule(target=fds, path=paths, access=st.sampled_from(ACCESS),
              extra=st.sampled_from(EXTRA), mode=st.sampled_from(MODES))
        def open_file(self, path: str, access: int, extra: int, mode: int) -> Any:
            flags = access | extra
            results = [outcome(os.open, os.path.join(r, path), flags, mode) for r in self.roots]
            fds = [v for kind, v in results if kind == "ok"]
            if len(fds) == 2:
                pair = (fds[0], fds[1], path)
                self.open.append(pair)
            else:
                for fd in fds:
                    os.close(fd)
                pair = None
            assert results[0][0] == results[1][0] and (fds or results[0] == results[1]), \
                f"open({path}, {flags:#o}, {mode:#o}): reference {results[0]}, " \
                f"subject {results[1]}"
            self.last = "open"
            return pair

        @rule(pair=fds, offset=offsets, payload=data)
        def write(self, pair: Any, offset: int, payload: bytes) -> None:
            if pair is None or pair not in self.open:
                return
            st_ref = os.fstat(pair[0])
            if st_ref.st_nlink == 0 and os.geteuid() != 0 and _kills_privs(st_ref.st_mode):
                # Not comparable: to clear setuid/setgid before this write the kernel sends a
                # SETATTR without a file handle, which libfuse's path-based API cannot deliver
                # for a file that has no name left (ESTALE; tmpfs writes).
                return
            a, b = (outcome(os.pwrite, fd, payload, offset) for fd in pair[:2])
            assert a == b, f"pwrite({offset}, {len(payload)} bytes): {a} vs {b}"
            self.last = "pwrite"  # the invariant: size, times, setuid/setgid cleared or not

        @rule(pair=fds, offset=offsets, size=st.sampled_from([0, 1, 4096, 70_000, 1 << 20]))
        def read(self, pair: Any, offset: int, size: int) -> None:
            if pair is None or pair not in self.open:
                return
            a, b = (outcome(os.pread, fd, size, offset) for fd in pair[:2])
            assert a == b, f"pread({size}, {offset}): reference {a}, subject {b}"
            self.last = "pread"

        @rule(pair=consumes(fds))
        def close(self, pair: Any) -> None:
            if pair is None or pair not in self.open:
                return
            self.open.remove(pair)
            os.close(pair[0])
            os.close(pair[1])
            self.last = "close"

        @rule(path=paths, size=st.sampled_from([0, 1, 5000, 1 << 20]))
        def truncate(self, path: str, size: int) -> None:
            try:
                st_ref = os.lstat(os.path.join(self.roots[0], path))
            except OSError:
                pass
            else:
                same = st_ref.st_size == size and stat.S_ISREG(st_ref.st_mode)
                if same and st_ref.st_blocks:
                    # Not comparable: tmpfs stamps mtime and ctime when a file with pages
                    # allocated is truncated to its own size; POSIX (and ext4) only on a change.
                    return
                if same and os.geteuid() != 0 and _kills_privs(st_ref.st_mode):
                    # Not comparable: both clear setuid/setgid, but tmpfs leaves ctime alone on
                    # a truncate to the same size even then, while libfuse's high-level API
                    # hands the filesystem a chmod (which stamps ctime) and a truncate.
                    return
            self.both(os.truncate, path, extra=(size,))

        @rule(path=paths, mode=st.sampled_from(MODES))
        def mkdir(self, path: str, mode: int) -> None:
            self.both(os.mkdir, path, extra=(mode,))

        @rule(path=paths)
        def rmdir(self, path: str) -> None:
            self.both(os.rmdir, path)

        @rule(path=paths)
        def unlink(self, path: str) -> None:
            self.both(os.unlink, path)

        @rule(src=paths, dst=paths, flags=st.sampled_from([0, RENAME_NOREPLACE,
                                                            RENAME_EXCHANGE]))
        def rename(self, src: str, dst: str, flags: int) -> None:
            if flags != RENAME_NOREPLACE and os.geteuid() != 0 and _two_names_of_one_file(
                    *(os.path.join(self.roots[0], p) for p in (src, dst))):
                # Not comparable: renaming one name of a file onto another succeeds without a
                # permission check (the kernel sees one inode and does nothing), but libfuse's
                # high-level API gives every name its own kernel inode, so for an unprivileged
                # caller the kernel checks first (EPERM in a sticky directory) and the
                # filesystem is never asked.
                return
            self.both(renameat2, src, dst, extra=(flags,))

        @rule(src=paths, dst=paths)
        def link(self, src: str, dst: str) -> None:
            self.both(os.link, src, dst)

        @rule(target_=st.sampled_from(["a", "../x", "b/c", "/abs/path", "t" * 300]),
              path=paths)
        def symlink(self, target_: str, path: str) -> None:
            self.both(lambda p, t=target_: os.symlink(t, p), path)

        @rule(path=paths)
        def readlink(self, path: str) -> None:
            self.both(os.readlink, path)

        @rule(path=paths, mode=st.sampled_from(MODES))
        def chmod(self, path: str, mode: int) -> None:
            self.both(os.chmod, path, extra=(mode,))

        @rule(path=paths, uid=st.sampled_from([*uids, -1]), gid=st.sampled_from([*gids, -1]))
        def chown(self, path: str, uid: int, gid: int) -> None:
            if uid == gid == -1:
                # Not comparable: the kernel sends FUSE an empty SETATTR for it, which
                # libfuse's high-level API answers without calling the filesystem, so no FUSE
                # filesystem on that API can update ctime as tmpfs does (nor see the call).
                return
            self.both(os.lchown, path, extra=(uid, gid))

        @rule(path=paths, atime=times, mtime=times)
        def utimens(self, path: str, atime: Optional[int], mtime: Optional[int]) -> None:
            self.both(utimensat, path, extra=(atime, mtime))  # set times compared by value

        @rule(path=paths, name=names, value=st.binary(max_size=300),
              flags=st.sampled_from([0, os.XATTR_CREATE, os.XATTR_REPLACE]))
        def setxattr(self, path: str, name: str, value: bytes, flags: int) -> None:
            self.both(lambda p: os.setxattr(p, name, value, flags, follow_symlinks=False), path)

        @rule(path=paths, name=names)
        def getxattr(self, path: str, name: str) -> None:
            self.both(lambda p: os.getxattr(p, name, follow_symlinks=False), path)

        @rule(path=paths)
        def listxattr(self, path: str) -> None:
            self.both(lambda p: [n for n in os.listxattr(p, follow_symlinks=False)
                                 if n.startswith("user.")], path)

        @rule(path=paths, name=names)
        def removexattr(self, path: str, name: str) -> None:
            self.both(lambda p: os.removexattr(p, name, follow_symlinks=False), path)

        @rule(path=st.sampled_from(["", *PATHS]))
        def listdir(self, path: str) -> None:
            self.both(os.listdir, path)

        @rule(path=st.sampled_from(["", *PATHS]))
        def statvfs(self, path: str) -> None:
            self.both(os.statvfs, path)

    return Differential


def check_against(ref_root: str, sub_root: str, max_examples: int = 50, steps: int = 50,
                  derandomize: bool = False, extra_paths: Sequence[str] = (),
                  atime: bool = True, uids: Sequence[int] = (0, 1000),
                  gids: Sequence[int] = (0, 100),
                  prepare: Optional[Callable[[], None]] = None) -> None:
    """Run the differential machine; raises AssertionError with a shrunk failing sequence.
    ``derandomize``: the same sequences on every run (hypothesis' derandomize setting);
    ``extra_paths``, ``atime``, ``uids``, ``gids`` and ``prepare``: see ``make_machine``."""
    from hypothesis import HealthCheck, settings
    from hypothesis.stateful import run_state_machine_as_test

    s = settings(max_examples=max_examples, stateful_step_count=steps, deadline=None,
                 derandomize=derandomize, database=None,
                 suppress_health_check=list(HealthCheck))
    machine = make_machine(ref_root, sub_root, extra_paths, atime, uids, gids, prepare)
    run_state_machine_as_test(machine, settings=s)
