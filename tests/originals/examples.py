"""The originals' own example filesystems, unchanged, on the original and through
``python -m pyfuse.compat``: one client transcript each, compared.

    python tests/originals/examples.py SUITE ORIGINAL_PYTHON EXAMPLES_DIR

SUITE is fusepy (EXAMPLES_DIR: fusepy 3.0.1's examples/: memory.py, loopback.py,
context.py, ioctl.py), llfuse or pyfuse3 (their sdists' examples/tmpfs.py), or
llfuse-flags / pyfuse3-flags (tests/compat_fs/initflags.py: what the INIT reply asks the
kernel for). ORIGINAL_PYTHON is a Python that has the original installed; this script runs
under pyfuse's own Python, which serves the same files through the runner. Prints a line per
example and exits 1 if any transcript differs (or an example fails on the original).
"""
from __future__ import annotations

import ctypes
import fcntl
import json
import os
import re
import stat
import struct
import sys
import tempfile
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # tests/: the transcripts of test_compat

from test_async_readdir import entries_per_read  # noqa: E402
from test_compat import _errno, _files_transcript, _xattr_transcript  # noqa: E402
from test_compat_caps import _rewrite  # noqa: E402

from pyfuse import testing  # noqa: E402


def memory(mnt: str, src: str) -> list[Any]:
    """fusepy's memory.py keeps one level (a file in a subdirectory breaks the root's
    listing, on fusepy as on pyfuse): every step in the root."""
    p = lambda name: os.path.join(mnt, name)  # noqa: E731
    out: list[Any] = [_rewrite(mnt)]
    with open(p("a.txt"), "w") as f:
        f.write("hello\n")
    with open(p("a.txt"), "a") as f:
        f.write("world\n")
    st = os.stat(p("a.txt"))
    out.append((open(p("a.txt")).read(), stat.filemode(st.st_mode), st.st_size, st.st_nlink))
    with open(p("a.txt"), "r+b") as f:
        f.seek(3)
        f.write(b"XY")
    out.append(open(p("a.txt"), "rb").read())
    os.truncate(p("a.txt"), 4)
    out.append((open(p("a.txt"), "rb").read(), os.stat(p("a.txt")).st_size))
    os.mkdir(p("d"), 0o750)
    out.append((stat.filemode(os.stat(p("d")).st_mode), os.listdir(p("d"))))
    os.rename(p("a.txt"), p("b.txt"))
    os.symlink("b.txt", p("ln"))
    out.append((sorted(os.listdir(mnt)), os.readlink(p("ln"))))
    os.chmod(p("b.txt"), 0o600)
    os.utime(p("b.txt"), ns=(1_500_000_000_123_456_789, 1_600_000_000_987_654_321))
    st = os.stat(p("b.txt"))
    out.append((stat.filemode(st.st_mode), st.st_atime_ns, st.st_mtime_ns))
    out.append(_xattr_transcript(mnt))
    out.append([_errno(lambda: os.stat(p("missing"))), _errno(lambda: open(p("missing")))])
    os.unlink(p("b.txt"))
    os.rmdir(p("d"))
    out.append((sorted(os.listdir(mnt)), os.statvfs(mnt).f_bsize))
    return out


def loopback(mnt: str, src: str) -> list[Any]:
    out = [_rewrite(mnt), _files_transcript(mnt)]
    out.append(sorted(os.listdir(src)))  # what reached the mirrored directory
    out.append(open(os.path.join(src, "a.txt"), "rb").read())
    return out


def context(mnt: str, src: str) -> list[Any]:
    """context.py's files say who asks: this process."""
    return [open(os.path.join(mnt, "uid")).read() == str(os.getuid()),
            open(os.path.join(mnt, "gid")).read() == str(os.getgid()),
            open(os.path.join(mnt, "pid")).read() == str(os.getpid()),
            sorted(os.listdir(mnt)), _errno(lambda: open(os.path.join(mnt, "uid"), "w"))]


def ioctl(mnt: str, src: str) -> list[Any]:
    """ioctl.py: the ioctl 'M' 1 (_IOWR, a uint32) answers its argument plus one."""
    p = os.path.join(mnt, "test")
    open(p, "w").close()
    cmd = (3 << 30) | (ctypes.sizeof(ctypes.c_uint32) << 16) | (ord("M") << 8) | 1  # IOWR
    with open(p, "rb") as f:
        got = struct.unpack("I", fcntl.ioctl(f, cmd, struct.pack("I", 123)))[0]
        other = _errno(lambda: fcntl.ioctl(f, cmd + 1, struct.pack("I", 1)))
    return [got, other, sorted(os.listdir(mnt))]


def tmpfs(mnt: str, src: str) -> list[Any]:
    """llfuse's and pyfuse3's examples/tmpfs.py (an sqlite database; no xattrs: the errno),
    then a directory of 600 files listed a page at a time: how many entries each reply held
    (pyfuse.compat's faces fetch a listing from the filesystem in batches of 512)."""
    out = [_rewrite(mnt), _files_transcript(mnt), _errno(lambda: _xattr_transcript(mnt))]
    d = os.path.join(mnt, "many")
    os.mkdir(d)
    for i in range(600):
        os.close(os.open(os.path.join(d, f"f{i:03d}"), os.O_CREAT | os.O_WRONLY, 0o644))
    return out + [entries_per_read(d)]


REPLY = re.compile(r"   flags=0x([0-9a-f]+)")
#: INIT flags a client cannot see: the size of writes (BIG_WRITES, MAX_PAGES), INIT_EXT.
SIZES = (1 << 5) | (1 << 22) | (1 << 30)

#: suite -> [(example file, its arguments before the mount point, client)]
SUITES: dict[str, list[tuple[str, list[str], Callable[[str, str], Any]]]] = {
    "fusepy": [("memory.py", [], memory), ("loopback.py", ["SRC"], loopback),
               ("context.py", [], context), ("ioctl.py", [], ioctl)],
    "llfuse": [("tmpfs.py", [], tmpfs)],
    "pyfuse3": [("tmpfs.py", [], tmpfs)],
}


def transcript(argv: list[str], client: Callable[[str, str], Any], log: str) -> Any:
    with tempfile.TemporaryDirectory(prefix="pyfuse-orig-") as top:
        mnt, src = os.path.join(top, "mnt"), os.path.join(top, "src")
        os.mkdir(mnt)
        os.mkdir(src)
        argv = [src if a == "SRC" else a for a in argv] + [mnt]
        with testing.mounted_process(argv, mnt, log=log):
            return json.loads(json.dumps(client(mnt, src), default=repr))


def flags(api: str, argv: list[str], log: str) -> int:
    with tempfile.TemporaryDirectory(prefix="pyfuse-orig-") as mnt:
        with testing.mounted_process([*argv, os.path.join(HERE, "..", "compat_fs",
                                                          "initflags.py"), api, mnt],
                                     mnt, log=log):
            os.stat(mnt)
    found = REPLY.findall(open(log).read())
    if not found:
        raise RuntimeError(f"no INIT reply in {log}")
    return int(found[0], 16) & ~SIZES


def main(argv: list[str]) -> int:
    suite, original, where = argv
    logs = tempfile.mkdtemp(prefix="pyfuse-orig-logs-")
    ours = [sys.executable, "-m", "pyfuse.compat"]
    failed = 0
    if suite.endswith("-flags"):
        api = suite[:-len("-flags")]
        a = flags(api, [original], os.path.join(logs, f"{api}-original.log"))
        b = flags(api, ours, os.path.join(logs, f"{api}-pyfuse.log"))
        print(f"{'ok  ' if a == b else 'FAIL'} {api}: INIT flags {a:#x} on the original, "
              f"{b:#x} on pyfuse (write sizes aside)")
        return 0 if a == b else 1
    for name, args, client in SUITES[suite]:
        path = os.path.join(where, name)
        seen = {}
        for how, prefix in (("original", [original]), ("pyfuse", ours)):
            log = os.path.join(logs, f"{suite}-{name}-{how}.log")
            try:
                seen[how] = transcript([*prefix, path, *args], client, log)
            except Exception as e:  # a failing client step: reported, compared
                seen[how] = f"{type(e).__name__}: {e}"
        same = seen["original"] == seen["pyfuse"]
        broken = isinstance(seen["original"], str)
        print(f"{'ok  ' if same and not broken else 'FAIL'} {suite} {name}: "
              f"{'the same transcript' if same else 'transcripts differ'}"
              f"{' (it fails on the original)' if broken else ''}")
        if not same or broken:
            failed += 1
            print(f"     original: {json.dumps(seen['original'])[:1500]}")
            print(f"     pyfuse:   {json.dumps(seen['pyfuse'])[:1500]}")
            print(f"     logs in {logs}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
