"""Instructions per operation in the daemon, counted by callgrind (deterministic, unlike this
VM's wall clock): every implementation side by side, or two builds of pyfuse.

    python bench/callgrind.py --impls cref,pyfuse,pyfuse-ll,llfuse,pyfuse3 \
        [--workloads w5,w1,w3n,w3s,w6]
    python bench/callgrind.py [--workloads w5,w1,w3n,w3nplain,w3nll,w5ll,w1ll,chmod,mkdir,
        write,writell]
        [--flags=--stats] CHECKOUT...

With --impls, each workload runs against each implementation of the tree suite (bench/tree.py,
bench/tree_ll.py and the peers of bench/peers, written as their docs teach; ``-tuned`` names
the labelled extras), single-threaded, from this checkout; the row gives instructions per
operation and each one's ratio to the first implementation. W5: one stat; W1: one listing of
/small and an lstat of each of its 8 entries; W6: an open, a 16-byte read and a close of
/small/f00003; all three with every cache timeout 0. W3n: one entry
of /big listed (os.listdir, twice); W3s: one entry of /big listed and stat'ed (os.scandir), with
timeouts of an hour so that the stats are served from what readdirplus handed the kernel, as in
a real run (under callgrind the daemon is 50 times slower than the 1 s default).

Each CHECKOUT is a pyfuse source tree with its compiled shim in place (a `git worktree` built
with `pip wheel` and the .so copied into it, or this checkout). For each workload and checkout
the daemon (bench/tree.py; bench/tree_ll.py, the inode API, for the *ll workloads; the memory
example for chmod, mkdir and write, a 16-byte pwrite, and memory_ll for writell) runs under
`valgrind --tool=callgrind`.

Either way, after a warm-up the counters are zeroed (`callgrind_control -z`), N operations run,
the counters are dumped, and the total is divided by N. Slow: a minute or two a workload.
--impls runs the daemons with Python's own allocator (pymalloc), as users run them; the
checkout comparison with PYTHONMALLOC=malloc (every small object a libc malloc), as the
figures of docs/performance.md were made.
docs/performance.md has the figures it made.
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Callable

Op = Callable[[str], None]


def wait_mount(mnt: str, seconds: float = 300) -> None:
    """Return once ``mnt`` is a mount point; SystemExit after ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with open("/proc/self/mountinfo") as f:
            if f" {mnt} " in f.read():
                return
        time.sleep(0.1)
    raise SystemExit(f"no mount at {mnt} after {seconds:.0f} s")


def measure(argv: list[str], cwd: str, warm: Op, work: Op, n: int,
            pymalloc: bool = False) -> float:
    """Instructions of the daemon ``argv MOUNTPOINT`` per operation of ``work`` (n of them).
    ``pymalloc``: Python's own allocator, as users run it (else PYTHONMALLOC=malloc, every
    small object a libc malloc, as the checkout comparisons of docs/performance.md ran)."""
    mnt = tempfile.mkdtemp(prefix="cg-mnt-")
    out = tempfile.mkdtemp(prefix="cg-out-")
    env = dict(os.environ, PYTHONPATH=cwd)  # that checkout's pyfuse
    env.pop("PYTHONMALLOC", None)
    if not pymalloc:
        env["PYTHONMALLOC"] = "malloc"
    p = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.%p",
                          *argv, mnt], cwd=cwd, env=env, stderr=subprocess.DEVNULL)
    try:
        wait_mount(mnt)
        warm(mnt)
        subprocess.run(["callgrind_control", "-z", str(p.pid)], capture_output=True, check=True)
        work(mnt)
        subprocess.run(["callgrind_control", "-d", "measure", str(p.pid)], capture_output=True,
                       check=True)
    finally:
        subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
        p.wait(120)
        os.rmdir(mnt)
    for f in glob.glob(os.path.join(out, "cg.*")):
        with open(f) as fp:
            text = fp.read()
        if "measure" in text.split("events:")[0]:
            m = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
            if m:
                return int(m.group(1)) / n
    raise SystemExit("callgrind wrote no dump named 'measure'")


def _stats(m: str) -> None:
    p = os.path.join(m, "small", "f00003")
    for _ in range(2000):
        os.stat(p)


def _lists(m: str) -> None:
    d = os.path.join(m, "small")
    for _ in range(200):
        for x in os.listdir(d):
            os.lstat(os.path.join(d, x))


def _reads(m: str) -> None:
    p = os.path.join(m, "small", "f00003")
    for _ in range(1000):
        fd = os.open(p, os.O_RDONLY)
        os.read(fd, 16)
        os.close(fd)


def _warm_reads(m: str) -> None:
    for _ in range(50):
        fd = os.open(os.path.join(m, "small", "f00003"), os.O_RDONLY)
        os.read(fd, 16)
        os.close(fd)


def _big(m: str) -> None:
    for _ in range(2):
        os.listdir(os.path.join(m, "big"))


def _chmods(m: str) -> None:
    f = os.path.join(m, "f")
    for k in range(1000):
        os.chmod(f, 0o600 | (k & 1) * 0o44)


def _mkdirs(m: str) -> None:
    d = os.path.join(m, "d")
    for _ in range(500):
        os.mkdir(d)
        os.rmdir(d)


def _writes(m: str, n: int = 1000) -> None:
    fd = os.open(os.path.join(m, "f"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for _ in range(n):
            os.pwrite(fd, b"0123456789abcdef", 0)
    finally:
        os.close(fd)


def _memory_warm(m: str) -> None:
    open(os.path.join(m, "f"), "w").close()
    _chmods(m)
    _mkdirs(m)


def _warm_stats(m: str) -> None:
    for _ in range(100):
        os.stat(os.path.join(m, "small", "f00003"))


def _warm_lists(m: str) -> None:
    for _ in range(20):
        os.listdir(os.path.join(m, "small"))


def _scans(m: str) -> None:
    with os.scandir(os.path.join(m, "big")) as it:
        for e in it:
            e.stat(follow_symlinks=False)


TREE = ["bench/tree.py"]
TREE_LL = ["bench/tree_ll.py"]  # the same tree through the inode API
WORKLOADS: dict[str, tuple[list[str], Op, Op, int]] = {
    "w5": ([*TREE, "--single", "--nocache"], _warm_stats, _stats, 2000),
    "w1": ([*TREE, "--single", "--nocache"], _warm_lists, _lists, 200),
    "w3n": ([*TREE, "--single", "--prepared"], _big, _big, 2),  # per listing
    "w3nplain": ([*TREE, "--single"], _big, _big, 2),
    "w3nll": ([*TREE_LL, "--single"], _big, _big, 2),
    "w5ll": ([*TREE_LL, "--single", "--nocache"], _warm_stats, _stats, 2000),
    "w1ll": ([*TREE_LL, "--single", "--nocache"], _warm_lists, _lists, 200),
    "chmod": (["-m", "pyfuse.examples.memory", "--single"], _memory_warm, _chmods, 1000),
    "mkdir": (["-m", "pyfuse.examples.memory", "--single"], _memory_warm, _mkdirs, 500),
    "write": (["-m", "pyfuse.examples.memory", "--single"], _memory_warm, _writes, 1000),
    "writell": (["-m", "pyfuse.examples.memory_ll", "--single"], _memory_warm, _writes, 1000),
}

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.append(ROOT)
from bench.suites import FLOOR_IMPLS  # noqa: E402  (the floor suite's: bench/floor.py)
from bench.suites import IMPLS as TREE_IMPLS  # noqa: E402  (the tree suite's daemons)

#: --impls: the tree suite's implementations, the floors of bench/floor.py (the path API's
#: pyfuse-cffi, pyfuse-str and pyfuse-fs, the inode API's pyfuse-ll-floor: lookup and getattr
#: cut down to a constant reply; W5 and W1 only), the prototype of bench/proto_ll.py (W5
#: only) and the matched extras with each listing kept (the *-stored: W3n and W3s)
IMPLS: dict[str, list[str]] = {
    **TREE_IMPLS,
    "pyfuse-cffi": FLOOR_IMPLS["pyfuse-cffi"],
    "pyfuse-fs": FLOOR_IMPLS["pyfuse-fs"],
    # the cheapest path API whose handler takes its path as a str (W5 and W1 only)
    "pyfuse-str": [sys.executable, os.path.join(HERE, "floor.py"), "--str"],
    "pyfuse-ll-floor": [sys.executable, os.path.join(HERE, "floor.py"), "--ll"],
    # the cheapest way to serve bench/peers/llfuse_tree.py unchanged, and the same with its
    # EntryAttributes read by C as they are (W5 and W1 only)
    "llfuse-compat-floor": [sys.executable, os.path.join(HERE, "floor.py"), "--llfuse"],
    "llfuse-compat-at": [sys.executable, os.path.join(HERE, "floor.py"), "--llfuse-at"],
    # the cheapest cffi design of the inode API's lookup and getattr, outside pyfuse, with the
    # tree's own handlers (W5 only)
    "proto-ll": [sys.executable, os.path.join(HERE, "proto_ll.py")],
    # labelled extras, matched: each directory's listing kept once made and handed out whole
    # (pyfuse: the list returned; llfuse and pyfuse3: a C iterator over it from the offset),
    # the binding's own cost an entry when the filesystem's is as small as its API lets it be
    # (W3n, W3s)
    "pyfuse-ll-stored": [*TREE_IMPLS["pyfuse-ll"], "--stored"],
    # the same children as a dict of name to Attr: iter(d.items()), iter(d.copy().items()),
    # list(d.items()) (docs/readdir.md's table)
    "pyfuse-ll-items": [*TREE_IMPLS["pyfuse-ll"], "--stored", "items"],
    "pyfuse-ll-copy": [*TREE_IMPLS["pyfuse-ll"], "--stored", "copy"],
    "pyfuse-ll-fresh": [*TREE_IMPLS["pyfuse-ll"], "--stored", "fresh"],
    "llfuse-stored": [*TREE_IMPLS["llfuse"], "--stored"],
    "pyfuse3-stored": [*TREE_IMPLS["pyfuse3"], "--stored"],
    "proto-ll-addr": [sys.executable, os.path.join(HERE, "proto_ll.py"), "--by-address"],
}
#: --impls: (daemon flags, warm-up, work, operations it counts)
IMPL_WORKLOADS: dict[str, tuple[list[str], Op, Op, int]] = {
    "w5": (["--single", "--nocache"], _warm_stats, _stats, 2000),
    "w1": (["--single", "--nocache"], _warm_lists, _lists, 200),
    "w3n": (["--single", "--longcache"], _big, _big, 2 * 65536),
    "w3s": (["--single", "--longcache"], _scans, _scans, 65536),
    "w6": (["--single", "--nocache"], _warm_reads, _reads, 1000),
}


def compare_impls(impls: list[str], workloads: list[str]) -> None:
    """One row a workload: instructions per operation of each implementation, and its ratio to
    the first."""
    for name in workloads:
        flags, warm, work, n = IMPL_WORKLOADS[name]
        row = [measure([*IMPLS[i], *flags], ROOT, warm, work, n, pymalloc=True) for i in impls]
        cells = "  ".join(f"{i} {v:,.0f} ({v / row[0]:.3f})" for i, v in zip(impls, row))
        print(f"{name}: {cells}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkouts", nargs="*")
    ap.add_argument("--impls", help="comma-separated, from: " + ", ".join(IMPLS))
    ap.add_argument("--workloads")
    ap.add_argument("--flags", default="", help="extra daemon flags, e.g. --flags=--stats")
    a = ap.parse_args()
    if a.impls:
        compare_impls(a.impls.split(","), (a.workloads or ",".join(IMPL_WORKLOADS)).split(","))
        return
    if not a.checkouts:
        ap.error("give --impls or at least one CHECKOUT")
    for name in (a.workloads or ",".join(WORKLOADS)).split(","):
        argv, warm, work, n = WORKLOADS[name]
        row = []
        for root in a.checkouts:
            root = os.path.abspath(root)
            tree = name.startswith(("w5", "w1", "w3n"))
            extra = a.flags.split() if tree else []
            row.append(measure([sys.executable, *argv, *extra], root, warm, work, n))
        cells = "  ".join(f"{os.path.basename(r)} {v:,.0f}" for r, v in zip(a.checkouts, row))
        ratio = f"  last/first {row[-1] / row[0]:.4f}" if len(row) > 1 else ""
        print(f"{name}: {cells}{ratio}", flush=True)


if __name__ == "__main__":
    main()
