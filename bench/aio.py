"""The async suite (issue 14): many slow reads at once. Every implementation serves 16 files
whose every read waits 10 ms (a remote round trip); the client keeps N reads of 4 KiB in flight
(N = 1, 16, 256 threads, each reading one after the other: bench/workloads.py A1, A16, A256)
and pyperf gives the time per read. Results: requests per second (1 / time per read) and the
daemon's threads.

- pyfuse-ll: pyfuse.examples.latency, ``async def read`` on the inode API (one event loop; its
  C loop single-threaded, the example's default: every slow handler is async);
- pyfuse: bench/slow_path.py, the path API, ``def read`` sleeping on the loop's threads
  (default loop: up to 10 workers);
- pyfuse3: bench/peers/pyfuse3_latency.py, trio, up to 512 worker tasks;
- pyfuse3-compat: the same file through ``python -m pyfuse.compat`` (pyfuse.compat.pyfuse3).

``python bench/aio.py --against CHECKOUT [--rounds R] [--calls K]`` compares A256 across two
builds: pyfuse-ll of this checkout, pyfuse-ll of CHECKOUT (another checkout with its compiled
module built in place, run with PYTHONPATH=CHECKOUT) and pyfuse3, mounted at once; each round
starts a fresh client per daemon, in rotating order, which warms up with one call and then
times K calls of 256 threads x 10 reads. Prints requests per second, each round and the mean,
median and range, and each daemon's CPU time a read (user and system, from /proc: at 256 reads
in flight on two CPUs the client is most of the machine, and the rates meet at its ceiling).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
PY = sys.executable
DELAY = "0.01"

AIO_IMPLS: dict[str, list[str]] = {
    "pyfuse-ll": [PY, "-m", "pyfuse.examples.latency", "{mnt}", "--delay", DELAY],
    "pyfuse": [PY, os.path.join(HERE, "slow_path.py"), "{mnt}", "--delay", DELAY],
    "pyfuse3": [PY, "-m", "bench.peers.pyfuse3_latency", "{mnt}", "--delay", DELAY],
    # the same pyfuse3 filesystem, unchanged, through pyfuse.compat's runner
    "pyfuse3-compat": [PY, "-m", "pyfuse.compat", "-m", "bench.peers.pyfuse3_latency", "{mnt}",
                       "--delay", DELAY],
}
AIO_WORKLOADS = ["A1", "A16", "A256"]


def threads_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads:"))


def run(impls: list[str], rounds: int, pyperf_args: list[str], summary: dict[str, Any]) -> None:
    """Mount every implementation, then run the workloads in interleaved rounds (as the other
    suites do); after each run, the daemon's thread count (the most seen is kept)."""
    from pyfuse import testing

    dirs = {impl: tempfile.mkdtemp(prefix=f"bench-aio-{impl}-") for impl in impls}
    try:
        with contextlib.ExitStack() as stack:
            live = []
            for impl in impls:
                entry = summary.setdefault(impl, {})
                argv = [a.format(mnt=dirs[impl]) for a in AIO_IMPLS[impl]]
                try:
                    proc = stack.enter_context(testing.mounted_process(
                        argv, dirs[impl], log=os.path.join(RESULTS, f"aio-{impl}.log")))
                    live.append((impl, proc))
                except Exception as e:  # a peer that does not mount: say so
                    entry["error"] = f"{type(e).__name__}: {str(e).splitlines()[0]}"
                    print(f"!! {impl}: {entry['error']}", flush=True)
            for r in range(rounds):
                for w in AIO_WORKLOADS:
                    k = r % max(len(live), 1)
                    for impl, proc in live[k:] + live[:k]:
                        print(f"== round {r + 1}/{rounds} {w} {impl}", flush=True)
                        res = subprocess.run(
                            [PY, os.path.join(HERE, "workloads.py"), "--mount", dirs[impl],
                             "--workload", w, "--append",
                             os.path.join(RESULTS, f"aio-{impl}.json"), "--quiet",
                             "--processes", "1", *pyperf_args], cwd=ROOT)
                        entry = summary[impl]
                        if res.returncode != 0:
                            entry[w] = f"failed (exit {res.returncode})"
                        key = f"threads_{w}"
                        entry[key] = max(entry.get(key, 0), threads_of(proc.pid))
    finally:
        for d in dirs.values():
            os.rmdir(d)


def report(summary: dict[str, Any], means: Callable[..., dict[str, dict[str, float]]]
           ) -> list[str]:
    """The async section of docs/benchmarks.md."""
    m = means("aio-", AIO_IMPLS)
    impls = [i for i in AIO_IMPLS if i in m or i in summary]
    if not impls:
        return []
    lines = ["## Many slow requests at once (async)", "",
             f"Made by `{summary.get('_command', 'python -m bench --suite aio')}`, started "
             f"{summary.get('_date', 'at an earlier date')}. " + " ".join(
                 (__doc__ or "").split("\n\n")[0].split()), "",
             "Each cell: requests per second (higher is better), and the daemon's threads "
             "(the most seen after a run). Implementations: pyfuse-ll is "
             "pyfuse.examples.latency (`async def read` on the inode API), pyfuse is "
             "bench/slow_path.py (the path API, `def read` sleeping on the default loop's "
             "threads), pyfuse3 is bench/peers/pyfuse3_latency.py (trio, up to 512 worker "
             "tasks).", "",
             "| workload | " + " | ".join(impls) + " | target |",
             "|---" * (len(impls) + 2) + "|"]
    for w in AIO_WORKLOADS:
        cells = []
        for impl in impls:
            v = m.get(impl, {}).get(w)
            entry = summary.get(impl, {})
            if v is None:
                cells.append(str(entry.get(w) or entry.get("error", "not run")))
            else:
                cells.append(f"{1 / v:,.0f}/s ({entry.get(f'threads_{w}', '?')} threads)")
        target = ""
        if w == "A256":
            rate = {i: 1 / m[i][w] for i in impls if w in m.get(i, {})}
            ll = rate.get("pyfuse-ll")
            checks = []
            if ll is not None and "pyfuse3" in rate:
                checks.append(f">= pyfuse3 {'met' if ll >= rate['pyfuse3'] else 'missed'}")
            if ll is not None and "pyfuse" in rate:
                checks.append(f">= 10x pyfuse {'met' if ll >= 10 * rate['pyfuse'] else 'missed'}"
                              f" ({ll / rate['pyfuse']:.1f}x)")
            target = "pyfuse-ll " + "; ".join(checks) if checks else ""
        lines.append(f"| {w} | " + " | ".join(cells) + f" | {target} |")
    return lines + [""]


#: --against's client: one warm-up call, then K timed calls of A256; prints requests per second
AB_CLIENT = """
import sys, time
sys.path.insert(0, sys.argv[3])
from bench import workloads
run = workloads._concurrent(256)
mnt, calls = sys.argv[1], int(sys.argv[2])
run(mnt)
t = time.perf_counter()
for _ in range(calls):
    run(mnt)
print(calls * 256 * workloads.ASYNC_READS / (time.perf_counter() - t))
"""


def against(other: str, rounds: int, calls: int) -> dict[str, list[float]]:
    """A256 of this checkout's pyfuse-ll, ``other``'s and pyfuse3, in rotating rounds."""
    from bench.workloads import ASYNC_READS
    from pyfuse import testing

    impls = {"pyfuse-ll": (AIO_IMPLS["pyfuse-ll"], ROOT),
             f"pyfuse-ll ({os.path.basename(os.path.abspath(other))})":
                 (AIO_IMPLS["pyfuse-ll"], os.path.abspath(other)),
             "pyfuse3": (AIO_IMPLS["pyfuse3"], ROOT)}
    rates: dict[str, list[float]] = {name: [] for name in impls}
    cpu: dict[str, list[float]] = {name: [] for name in impls}  # daemon CPU us a read
    reads = (calls + 1) * 256 * ASYNC_READS
    dirs = {name: tempfile.mkdtemp(prefix="bench-aio-ab-") for name in impls}
    try:
        with contextlib.ExitStack() as stack:
            pids = {name: stack.enter_context(testing.mounted_process(
                [a.format(mnt=dirs[name]) for a in argv], dirs[name],
                env=dict(os.environ, PYTHONPATH=path))).pid
                for name, (argv, path) in impls.items()}
            names = list(impls)
            for r in range(rounds):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    before = cpu_seconds(pids[name])
                    out = subprocess.run([PY, "-c", AB_CLIENT, dirs[name], str(calls), ROOT],
                                         capture_output=True, text=True, check=True).stdout
                    cpu[name].append((cpu_seconds(pids[name]) - before) / reads * 1e6)
                    rates[name].append(float(out))
                print(f"round {r + 1}/{rounds}: " + ", ".join(
                    f"{n} {v[-1]:,.0f}/s" for n, v in rates.items()), flush=True)
    finally:
        for d in dirs.values():
            os.rmdir(d)
    for name, v in rates.items():
        print(f"{name}: mean {statistics.mean(v):,.0f}/s, median {statistics.median(v):,.0f}/s,"
              f" {min(v):,.0f} to {max(v):,.0f}; daemon CPU a read, median "
              f"{statistics.median(cpu[name]):.1f} us")
    return rates


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process ``pid`` and its threads so far, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    p = argparse.ArgumentParser(description="A256 of this checkout against another's")
    p.add_argument("--against", required=True, metavar="CHECKOUT")
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--calls", type=int, default=3)
    a = p.parse_args()
    sys.path.insert(0, ROOT)
    against(a.against, a.rounds, a.calls)


if __name__ == "__main__":
    main()
