"""Differential conformance testing: the same random operations on a reference directory (for
example on tmpfs) and on a directory of the filesystem under test, with identical results
required: return values, errno, file contents, directory listings, extended attributes and the
stat fields that do not depend on the filesystem's layout (type and permission bits, nlink, uid,
gid, the size of files and symbolic links, explicitly set times).

    from pyfuse.conformance import check_against
    check_against("/dev/shm/ref", "/mnt/myfs", max_examples=50, steps=60)

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


def outcome(fn: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    """("ok", comparable result) or ("err", errno name)."""
    try:
        r = fn(*args)
    except OSError as e:
        return "err", errno.errorcode.get(e.errno or 0, e.errno)
    if isinstance(r, os.stat_result):
        r = summary(r)
    elif isinstance(r, list):
        r = sorted(r)
    elif isinstance(r, os.statvfs_result):
        r = None  # sizes differ by nature; only success is compared
    return "ok", r


def make_machine(ref_root: str, sub_root: str, extra_paths: Sequence[str] = ()) -> type:
    """A hypothesis RuleBasedStateMachine comparing ``sub_root`` with ``ref_root``. Each run
    works in a fresh directory under both roots; ``extra_paths`` (relative to that directory,
    e.g. ``"../shared/file"``) add paths prepared by the caller to the ones it uses."""
    from hypothesis import strategies as st
    from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, rule

    paths = st.sampled_from(PATHS + list(extra_paths))
    data = st.binary(max_size=5000) | st.integers(0, 70_000).map(lambda n: b"z" * n)
    offsets = st.sampled_from([0, 1, 4095, 4096, 10_000, 65_536, 131_073, 1 << 20])
    names = st.sampled_from(["user.a", "user.b", "user.long" + "x" * 100])
    times = st.none() | st.just(-1) | st.integers(0, 2**33 * 10**9)

    class Differential(RuleBasedStateMachine):
        fds = Bundle("fds")

        def __init__(self) -> None:
            super().__init__()
            top = f"t{os.getpid()}-{next(_counter)}"
            self.roots = (os.path.join(ref_root, top), os.path.join(sub_root, top))
            for r in self.roots:
                os.mkdir(r)
            self.open: list[tuple[int, int, str]] = []

        def both(self, fn: Callable[..., Any], *rel: str, extra: tuple[Any, ...] = ()
                 ) -> tuple[str, Any]:
            results = [outcome(fn, *(os.path.join(r, p) for p in rel), *extra)
                       for r in self.roots]
            assert results[0] == results[1], \
                f"{fn.__name__}{rel + extra}: reference {results[0]}, subject {results[1]}"
            for p in rel:  # and the paths it touched look the same
                a, b = (outcome(os.lstat, os.path.join(r, p)) for r in self.roots)
                assert a == b, f"lstat({p}) after {fn.__name__}: reference {a}, subject {b}"
            return results[0]

        def same_lstat(self, path: str, after: str) -> None:
            a, b = (outcome(os.lstat, os.path.join(r, path)) for r in self.roots)
            assert a == b, f"lstat({path}) after {after}: reference {a}, subject {b}"

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
            a, b = (outcome(os.lstat, os.path.join(r, path)) for r in self.roots)
            assert a == b, f"lstat({path}) after open: reference {a}, subject {b}"
            return pair

        @rule(pair=fds, offset=offsets, payload=data)
        def write(self, pair: Any, offset: int, payload: bytes) -> None:
            if pair is None or pair not in self.open:
                return
            a, b = (outcome(os.pwrite, fd, payload, offset) for fd in pair[:2])
            assert a == b, f"pwrite({offset}, {len(payload)} bytes): {a} vs {b}"
            self.same_lstat(pair[2], "pwrite")  # size; setuid/setgid cleared or not

        @rule(pair=fds, offset=offsets, size=st.sampled_from([0, 1, 4096, 70_000, 1 << 20]))
        def read(self, pair: Any, offset: int, size: int) -> None:
            if pair is None or pair not in self.open:
                return
            a, b = (outcome(os.pread, fd, size, offset) for fd in pair[:2])
            assert a == b, f"pread({size}, {offset}): reference {a}, subject {b}"

        @rule(pair=consumes(fds))
        def close(self, pair: Any) -> None:
            if pair is None or pair not in self.open:
                return
            self.open.remove(pair)
            os.close(pair[0])
            os.close(pair[1])

        @rule(path=paths, size=st.sampled_from([0, 1, 5000, 1 << 20]))
        def truncate(self, path: str, size: int) -> None:
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

        @rule(path=paths, uid=st.sampled_from([0, 1000, -1]), gid=st.sampled_from([0, 100, -1]))
        def chown(self, path: str, uid: int, gid: int) -> None:
            self.both(os.lchown, path, extra=(uid, gid))

        @rule(path=paths, atime=times, mtime=times)
        def utimens(self, path: str, atime: Optional[int], mtime: Optional[int]) -> None:
            done = self.both(utimensat, path, extra=(atime, mtime)) == ("ok", None)
            explicit = [t for t in (atime, mtime) if t is not None and t >= 0]
            if done and explicit:
                a, b = (outcome(lambda p: (os.lstat(p).st_atime_ns, os.lstat(p).st_mtime_ns),
                                os.path.join(r, path)) for r in self.roots)
                if atime is not None and atime >= 0 and a[0] == "ok":
                    assert a[1][0] == b[1][0], f"atime after utimensat: {a} vs {b}"
                if mtime is not None and mtime >= 0 and a[0] == "ok":
                    assert a[1][1] == b[1][1], f"mtime after utimensat: {a} vs {b}"

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
                  derandomize: bool = False, extra_paths: Sequence[str] = ()) -> None:
    """Run the differential machine; raises AssertionError with a shrunk failing sequence.
    ``derandomize``: the same sequences on every run (hypothesis' derandomize setting)."""
    from hypothesis import HealthCheck, settings
    from hypothesis.stateful import run_state_machine_as_test

    s = settings(max_examples=max_examples, stateful_step_count=steps, deadline=None,
                 derandomize=derandomize, database=None,
                 suppress_health_check=list(HealthCheck))
    run_state_machine_as_test(make_machine(ref_root, sub_root, extra_paths), settings=s)
