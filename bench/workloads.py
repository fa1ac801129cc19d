"""The client side of the benchmarks: one pyperf benchmark per workload against a live mount.

    python bench/workloads.py --mount M --workload W1 [pyperf options, e.g. -o out.json --fast]

W1    listdir + lstat of each entry of /small (8 files); run with caching off
W5    stat of one file; run with caching off
W2    cold ``ls -l`` (listdir + lstat of each entry) of an 8-file directory never visited before:
      each call takes the next of /w2's 1,000,000 directories, from a random start per process
W3n   listdir of /big (65,536 names)
W3s   scandir + stat of each entry of /big
walk  os.walk of /src (4,161 directories) + lstat of each of its 61,440 files

A suffix names the daemon's loop and caching (see bench/__main__.py): W1 and W5 are run
single-threaded, ``mt`` is the default (multi-threaded) loop, ``st`` single-threaded.
"""
from __future__ import annotations

import itertools
import os
import random

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
WORKLOADS = {name + sfx: fn for name, fn in BASE.items() for sfx in ("", "mt", "st")}


def _pass_args(cmd: list[str], args: object) -> None:
    cmd.extend(["--mount", args.mount, "--workload", args.workload])  # type: ignore[attr-defined]


def main() -> None:
    runner = pyperf.Runner(add_cmdline_args=_pass_args)
    runner.argparser.add_argument("--mount", required=True)
    runner.argparser.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    args = runner.parse_args()
    runner.bench_func(args.workload, WORKLOADS[args.workload], args.mount)


if __name__ == "__main__":
    main()
