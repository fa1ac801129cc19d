"""The wall clock of the floors: W5 (or any tree workload) against bench/callgrind.py's
implementations, the floors and prototypes among them, with the client and every daemon on
one CPU (as the pinned suite runs, see bench/pinned.py for why).

    python bench/pinned_floor.py [--workload W5] [--rounds 30] [--reps 2000] [--cpu N] \
        cref-ll llfuse pyfuse-ll proto-ll pyfuse-ll-floor ...

Every implementation is mounted at once (single-threaded, every cache timeout 0), then each
round runs the workload ``--reps`` times against each mount, in an order that rotates from
round to round, so that the machine's drift hits every implementation alike. The row gives
the median and the minimum of the rounds' mean time per operation, and each one's ratio to
the first implementation. The floors' figures in docs/performance.md come from it. A
one-off tool: the pinned suite of ``make bench`` is the record.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.dirname(HERE))
from bench import workloads  # noqa: E402
from bench.callgrind import IMPLS, wait_mount  # noqa: E402
from bench.pinned import default_cpu, one_cpu  # noqa: E402


def run(impls: list[str], workload: str, rounds: int, reps: int) -> dict[str, list[float]]:
    """Each implementation's round means, in microseconds per operation."""
    fn = workloads.WORKLOADS[workload]
    mnts: dict[str, str] = {}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for name in impls:
            mnts[name] = tempfile.mkdtemp(prefix=f"pinned-floor-{name}-")
            procs.append(subprocess.Popen([*IMPLS[name], mnts[name], "--single", "--nocache"],
                                          cwd=os.path.dirname(HERE),
                                          stderr=subprocess.DEVNULL))
        for mnt in mnts.values():
            wait_mount(mnt, 60)
            fn(mnt)  # warm: the interpreter's and the daemon's caches
            fn(mnt)
        order = list(mnts.items())
        times: dict[str, list[float]] = {name: [] for name in impls}
        for r in range(rounds):
            k = r % len(order)
            for name, mnt in order[k:] + order[:k]:
                t0 = time.perf_counter()
                for _ in range(reps):
                    fn(mnt)
                times[name].append((time.perf_counter() - t0) / reps * 1e6)
        return times
    finally:
        for mnt in mnts.values():
            subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for mnt in mnts.values():
            os.rmdir(mnt)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("impls", nargs="+", help="from: " + ", ".join(IMPLS))
    ap.add_argument("--workload", default="W5", help="one of bench/workloads.py's")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--cpu", type=int, default=default_cpu())
    a = ap.parse_args()
    unknown = [i for i in a.impls if i not in IMPLS]
    if unknown:
        ap.error(f"unknown implementation {unknown[0]!r}")
    with one_cpu(a.cpu):
        times = run(a.impls, a.workload, a.rounds, a.reps)
    first = times[a.impls[0]]
    med0, min0 = statistics.median(first), min(first)
    for name, t in times.items():
        med = statistics.median(t)
        print(f"{a.workload} {name:20s} median {med:7.2f} us ({med / med0:.3f})  "
              f"min {min(t):7.2f} us ({min(t) / min0:.3f})", flush=True)


if __name__ == "__main__":
    main()
