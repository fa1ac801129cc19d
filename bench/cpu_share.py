"""Where a listing workload's time goes: the client's CPU, the daemon's CPU (user and kernel),
and what is left (waiting), per iteration, for implementations mounted side by side and
measured in interleaved rounds. It answers "how fast could this be with a daemon that cost
nothing": the wall time can never fall below the client's share.

    python bench/cpu_share.py [--impl cref,pyfuse-ll,pyfuse-ll-prepared,pyfuse]
        [--workload W3s] [--rounds 8] [--per-round 5] [--flags=--nocache]

Implementations are bench/suites.py's IMPLS plus ``pyfuse-ll-prepared`` (bench/tree_ll.py
--prepared: /big's listing built once, so the daemon runs no filesystem code for it),
``pyfuse-single`` and ``cref-single`` (the single-threaded loops, with --flags too),
``pyfuse-clonefd`` (a /dev/fuse clone per worker) and ``pyfuse-sticky`` (pyfuse's own loop). Daemons
run with their default flags (W2, W3 and walk are measured that way in the tree suite), plus
``--flags`` (``--nocache`` and the default loop: the tree suite's W1mt and W5mt). The
daemon's CPU is the sum over its threads of /proc/PID/task/*/schedstat (nanoseconds on a CPU),
split into user and kernel by the same threads' utime and stime (clock ticks: coarse, summed
over all rounds); the client's is getrusage of this process. Medians over the rounds; "rest"
is wall minus client minus daemon (nobody on a CPU: wake-ups, or time the hypervisor gave to
others), "steal" the mean time per iteration /proc/stat counted as stolen from this VM.
docs/performance.md has the figures it made.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import sys
import tempfile
import time

# The checkout, for the bench package; last, so that an installed pyfuse is the one imported.
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import workloads  # noqa: E402
from bench.suites import HERE, IMPLS, PY, build_cref  # noqa: E402

EXTRA = {"pyfuse-ll-prepared": [PY, os.path.join(HERE, "tree_ll.py"), "--prepared"],
         # the same daemons on the single-threaded loop, beside the default one
         "pyfuse-single": [PY, os.path.join(HERE, "tree.py"), "--single"],
         "cref-single": [IMPLS["cref"][0], "--single"],
         # pyfuse with a /dev/fuse clone per worker, and on its own loop (sticky=True)
         "pyfuse-clonefd": [PY, os.path.join(HERE, "tree.py"), "--clone-fd"],
         "pyfuse-sticky": [PY, os.path.join(HERE, "tree.py"), "--sticky"]}


def _threads(pid: int) -> list[str]:
    return [f"/proc/{pid}/task/{t}" for t in os.listdir(f"/proc/{pid}/task")]


def daemon_cpu(pid: int) -> tuple[int, int, int]:
    """(nanoseconds on a CPU, user ticks, kernel ticks) of every thread of ``pid`` so far."""
    ns = user = kernel = 0
    for t in _threads(pid):
        try:
            with open(t + "/schedstat") as f:
                ns += int(f.read().split()[0])
            with open(t + "/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            user, kernel = user + int(fields[11]), kernel + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass  # a thread that ended meanwhile
    return ns, user, kernel


def steal_ticks() -> int:
    """Clock ticks the hypervisor gave both vCPUs' time to others (``steal`` in /proc/stat)."""
    with open("/proc/stat") as f:
        return int(f.readline().split()[8])


def client_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--impl", default="cref,pyfuse-ll,pyfuse-ll-prepared,pyfuse")
    ap.add_argument("--workload", default="W3s", choices=sorted(workloads.BASE))
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--per-round", type=int, default=5)
    ap.add_argument("--flags", default="", help="extra daemon flags, e.g. --flags=--nocache")
    a = ap.parse_args()
    from pyfuse import testing

    table = {**IMPLS, **EXTRA}
    impls = a.impl.split(",")
    fn = workloads.BASE[a.workload]
    if "cref" in impls:
        build_cref()
    rows: dict[str, list[tuple[float, float, float]]] = {i: [] for i in impls}
    stolen = dict.fromkeys(impls, 0)
    ticks = {i: [0, 0] for i in impls}
    with contextlib.ExitStack() as stack:
        live = {}
        for impl in impls:
            mnt = tempfile.mkdtemp(prefix=f"cpu-{impl}-")
            stack.callback(os.rmdir, mnt)
            log = os.path.join(tempfile.gettempdir(), f"cpu-{impl}.log")
            argv = table[impl] + [mnt] + a.flags.split()
            live[impl] = (stack.enter_context(testing.mounted_process(argv, mnt, log=log)), mnt)
            for _ in range(2):
                fn(mnt)  # warm: the kernel's caches and the daemon's
        for r in range(a.rounds):
            order = impls[r % len(impls):] + impls[:r % len(impls)]
            for impl in order:
                proc, mnt = live[impl]
                s0 = steal_ticks()
                d0, c0, w0 = daemon_cpu(proc.pid), client_cpu(), time.perf_counter()
                for _ in range(a.per_round):
                    fn(mnt)
                w1, c1, d1 = time.perf_counter(), client_cpu(), daemon_cpu(proc.pid)
                stolen[impl] += steal_ticks() - s0
                k = a.per_round
                rows[impl].append(((w1 - w0) / k, (c1 - c0) / k, (d1[0] - d0[0]) / k / 1e9))
                ticks[impl][0] += d1[1] - d0[1]
                ticks[impl][1] += d1[2] - d0[2]
    ref = statistics.median(w for w, _, _ in rows[impls[0]])
    scale, unit = (1e6, "us") if ref < 0.01 else (1e3, "ms")
    print(f"{a.workload}, {a.rounds} rounds of {a.per_round}; {unit} per iteration (medians), "
          f"wall relative to {impls[0]}")
    print(f"{'impl':<20}{'wall':>9}{'ratio':>7}{'client':>9}{'daemon':>9}{'(user/kernel)':>15}"
          f"{'rest':>8}{'steal':>8}")
    for impl in impls:
        wall, client, daemon = (statistics.median(x[j] for x in rows[impl]) for j in range(3))
        u, k = ticks[impl]
        split = f"{u / (u + k):.0%}/{k / (u + k):.0%}" if u + k else "-"
        hz = os.sysconf("SC_CLK_TCK")  # the mean over the rounds: ticks are coarse
        steal = stolen[impl] / hz / (a.rounds * a.per_round) * scale
        print(f"{impl:<20}{wall * scale:>9.1f}{wall / ref:>7.2f}{client * scale:>9.1f}"
              f"{daemon * scale:>9.1f}{split:>15}{(wall - client - daemon) * scale:>8.1f}"
              f"{steal:>8.1f}")

if __name__ == "__main__":
    main()
