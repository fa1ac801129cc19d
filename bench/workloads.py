"""The client side of the benchmarks: one pyperf benchmark per workload against a live mount.

    python bench/workloads.py --mount M --workload W1 [pyperf options, e.g. -o out.json --fast]

W1   listdir + lstat of each entry of /small (8 files); run with caching off
W5   stat of one file; run with caching off
W1mt, W5mt  the same on the default multi-threaded loop
W3n  listdir of /big (65,536 names)
W3s  scandir + stat of each entry of /big
"""
from __future__ import annotations

import os

import pyperf


def w1(mnt: str) -> None:
    d = os.path.join(mnt, "small")
    for name in os.listdir(d):
        os.lstat(os.path.join(d, name))


def w5(mnt: str) -> None:
    os.stat(os.path.join(mnt, "small", "f00003"))


def w3n(mnt: str) -> None:
    os.listdir(os.path.join(mnt, "big"))


def w3s(mnt: str) -> None:
    with os.scandir(os.path.join(mnt, "big")) as it:
        for e in it:
            e.stat(follow_symlinks=False)


WORKLOADS = {"W1": w1, "W5": w5, "W1mt": w1, "W5mt": w5, "W3n": w3n, "W3s": w3s}


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
