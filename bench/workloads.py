"""The client side of the benchmarks: one pyperf benchmark per workload against a live mount.

    python bench/workloads.py --mount M --workload W1 [pyperf options, e.g. -o out.json --fast]

W1    listdir + lstat of each entry of /small (8 files); run with caching off
W5    stat of one file; run with caching off
W2    cold ``ls -l`` (listdir + lstat of each entry) of an 8-file directory never visited before:
      each call takes the next of /w2's 1,000,000 directories, from a random start per process
W3n   listdir of /big (65,536 names)
W3s   scandir + stat of each entry of /big
walk  os.walk of /src (4,161 directories) + lstat of each of its 61,440 files

A suffix names the daemon's loop and caching (see bench/suites.py): W1 and W5 are run
single-threaded, ``mt`` is the default (multi-threaded) loop, ``st`` single-threaded; ``w``
(W3nw, walkw: warm) the same listings against daemons started with --dircache --longcache,
which ask the kernel to keep each listing it reads (docs/caching.md) and give every entry an
hour's timeouts: the second and later ones are served by the kernel.

The data workloads (--mount is then the directory to use). Files are opened with O_DIRECT and
page-aligned buffers, so every read(2)/write(2) reaches the filesystem as requests of that size,
whatever the mount's caching:

seqwrite  write a 1 GiB file ("seq") in 1 MiB write(2) calls
seqread   read it in 1 MiB read(2) calls
rand1     one reader: 4 KiB pread(2) at random 4 KiB-aligned offsets (time per read)
rand4     four reader threads doing the same (time per read, all threads together)

The async workloads (bench/aio.py; --mount is a latency filesystem's mount):

A1, A16, A256  N reads of 4 KiB in flight at once (N threads reading one after the other),
               each waiting 10 ms in the filesystem (time per read)
"""
from __future__ import annotations

import itertools
import mmap
import os
import random
import threading
from typing import Callable

import pyperf

_w2_next = itertools.count(random.randrange(1_000_000))


def w1(mnt: str) -> None:
    d = os.path.join(mnt, "small")
    for name in os.listdir(d):
        os.lstat(os.path.join(d, name))


def w5(mnt: str) -> None:
    os.stat(os.path.join(mnt, "small", "f00003"))


def w2(mnt: str) -> None:
    d = os.path.join(mnt, "w2", f"d{next(_w2_next) % 1_000_000:06d}")
    for name in os.listdir(d):
        os.lstat(os.path.join(d, name))


def w3n(mnt: str) -> None:
    os.listdir(os.path.join(mnt, "big"))


def w3s(mnt: str) -> None:
    with os.scandir(os.path.join(mnt, "big")) as it:
        for e in it:
            e.stat(follow_symlinks=False)


def walk(mnt: str) -> None:
    for top, _, files in os.walk(os.path.join(mnt, "src")):
        for f in files:
            os.lstat(os.path.join(top, f))


BASE = {"W1": w1, "W5": w5, "W2": w2, "W3n": w3n, "W3s": w3s, "walk": walk}
WORKLOADS: dict[str, Callable[[str], None]] = {
    name + sfx: fn for name, fn in BASE.items() for sfx in ("", "mt", "st")}
# the warm rows: the same listings again, against daemons that ask the kernel to keep them
WORKLOADS.update({"W3nw": w3n, "walkw": walk})

FILE_SIZE, CHUNK, PAGE, READS = 1 << 30, 1 << 20, 4096, 2000
_block = mmap.mmap(-1, CHUNK)  # page-aligned, as O_DIRECT wants
_block[:] = os.urandom(CHUNK)
_fds: dict[str, int] = {}


def seqwrite(d: str) -> None:
    fd = os.open(os.path.join(d, "seq"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT,
                 0o644)
    try:
        for _ in range(FILE_SIZE // CHUNK):
            os.write(fd, _block)
    finally:
        os.close(fd)


def seqread(d: str) -> None:
    buf = mmap.mmap(-1, CHUNK)
    fd = os.open(os.path.join(d, "seq"), os.O_RDONLY | os.O_DIRECT)
    try:
        total = 0
        while n := os.readv(fd, [buf]):
            total += n
    finally:
        os.close(fd)
    assert total == FILE_SIZE, total


def _reader(d: str, n: int, seed: int) -> None:
    fd = _fds.get(d)
    if fd is None:
        fd = _fds[d] = os.open(os.path.join(d, "seq"), os.O_RDONLY | os.O_DIRECT)
    rng = random.Random(seed)
    buf = [mmap.mmap(-1, PAGE)]
    for _ in range(n):
        os.preadv(fd, buf, rng.randrange(FILE_SIZE // PAGE) * PAGE)


def rand1(d: str) -> None:
    _reader(d, READS, random.randrange(1 << 30))


def rand4(d: str) -> None:
    threads = [threading.Thread(target=_reader, args=(d, READS // 4, random.randrange(1 << 30)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


DATA = {"seqwrite": (seqwrite, 1), "seqread": (seqread, 1), "rand1": (rand1, READS),
        "rand4": (rand4, READS)}
WORKLOADS.update({name: fn for name, (fn, _) in DATA.items()})

# The async suite (bench/aio.py; --mount is a mount of a latency filesystem: file0..file15,
# each read waits 10 ms): AN keeps N reads of 4 KiB in flight, one per thread of N threads kept
# between calls (on files opened once); in a call each thread makes ASYNC_READS reads, one after
# the other, and pyperf reports the time per read (requests per second: 1 / time).
ASYNC_READS = 10
_crews: dict[tuple[str, int], tuple[threading.Barrier, threading.Barrier]] = {}


def _crew(d: str, n: int) -> tuple[threading.Barrier, threading.Barrier]:
    start, end = threading.Barrier(n + 1), threading.Barrier(n + 1)

    def work(fd: int) -> None:
        while True:
            start.wait()
            for _ in range(ASYNC_READS):
                if len(os.pread(fd, PAGE, 0)) != PAGE:
                    raise SystemExit("short read")
            end.wait()

    for i in range(n):
        fd = os.open(os.path.join(d, f"file{i % 16}"), os.O_RDONLY)
        threading.Thread(target=work, args=(fd,), daemon=True).start()
    return start, end


def _concurrent(n: int) -> Callable[[str], None]:
    def run(d: str) -> None:
        start, end = _crews.get((d, n)) or _crews.setdefault((d, n), _crew(d, n))
        start.wait()
        end.wait()
    return run


ASYNC = {f"A{n}": n for n in (1, 16, 256)}
WORKLOADS.update({name: _concurrent(n) for name, n in ASYNC.items()})


def _pass_args(cmd: list[str], args: object) -> None:
    cmd.extend(["--mount", args.mount, "--workload", args.workload])  # type: ignore[attr-defined]


def main() -> None:
    runner = pyperf.Runner(add_cmdline_args=_pass_args)
    runner.argparser.add_argument("--mount", required=True)
    runner.argparser.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    args = runner.parse_args()
    inner = DATA[args.workload][1] if args.workload in DATA else \
        ASYNC[args.workload] * ASYNC_READS if args.workload in ASYNC else 1
    runner.bench_func(args.workload, WORKLOADS[args.workload], args.mount, inner_loops=inner)


if __name__ == "__main__":
    main()
