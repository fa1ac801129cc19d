"""The pinned suite: the tree suite's per-request and listing workloads again, with the client and
every daemon on one CPU (``os.sched_setaffinity`` of the bench process, which its daemons, their
threads and the pyperf workers inherit).

Why: on this project's VM (2 vCPUs, a firecracker guest whose cpuidle driver is haltpoll with
``haltpoll.guest_halt_poll_ns=0``) a request that wakes a thread on the other, idle vCPU waits
for the hypervisor to wake that vCPU. Unpinned, the time of a W5 ``stat`` is then mostly where
the scheduler put the client and the daemon: the same C daemon measures 8.4 us when they share a
vCPU and 25-120 us when they do not (docs/performance.md, "One CPU"). Pinned, every request is a
switch between two threads on one CPU and the time is what the kernel and the daemon spend on
it, so the ratios follow the daemons' own costs. Both views are reported; the tree suite above
stays unpinned (several CPUs is how filesystems are used).
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Iterator

from bench.suites import GROUPS as TREE_GROUPS
from bench.suites import SLOW

# the implementations of the tree suite the issue-28 targets name, their C references and the
# compat faces beside their originals
IMPLS = ["cref", "cref-ll", "pyfuse", "pyfuse-ll", "llfuse", "pyfuse3", "llfuse-compat",
         "pyfuse3-compat"]
# (workloads, daemon flags): the tree suite's groups without the walks (a walk takes seconds)
# and the warm group (listings the kernel keeps: no daemon cost to compare)
GROUPS: list[tuple[list[str], list[str]]] = [
    ([w for w in ws if w not in SLOW], flags) for ws, flags in TREE_GROUPS
    if "--dircache" not in flags]
# issue 28, tree suite: W5 single-threaded at most 1.05x C (inode API) and 1.10x (path API)
W5_LIMITS = {"pyfuse-ll": 1.05, "pyfuse": 1.10}


def default_cpu() -> int:
    """The CPU the suite runs on: the highest one this process may use."""
    return max(os.sched_getaffinity(0))


@contextlib.contextmanager
def one_cpu(cpu: int) -> Iterator[None]:
    """Run the block, and every process and thread started in it, on ``cpu`` alone."""
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, old)


def report(summary: dict[str, Any], means: Callable[..., dict[str, dict[str, float]]],
           cell: Callable[..., str]) -> list[str]:
    """The pinned section of docs/benchmarks.md: mean time and ratio to cref per row, and the
    inode API's standing against llfuse and pyfuse3 (issue 28: faster on every row)."""
    m = means("pinned-", IMPLS)
    ref = m.get("cref", {})
    impls = [i for i in IMPLS if i in m or i in summary]
    if not impls:
        return []
    lines = ["## One CPU (pinned)", "",
             f"Made by `{summary.get('_command', 'python -m bench --suite pinned')}`, started "
             f"{summary.get('_date', 'at an earlier date')}, on CPU {summary.get('_cpu', '?')}. "
             + " ".join(" ".join((__doc__ or "").split("\n\n")[:2]).split())
             + " The same daemons and client as the tree suite, the same groups (walk left "
             "out); each cell: mean time and ratio to cref. Last column: pyfuse-ll's time "
             "against the faster of llfuse and pyfuse3 (below 1: pyfuse-ll is faster) and, on "
             "W5, issue 28's limits.", "",
             "| workload | " + " | ".join(impls) + " | pyfuse-ll / best of llfuse, pyfuse3 |",
             "|---" * (len(impls) + 2) + "|"]
    for w in [w for ws, _ in GROUPS for w in ws]:
        cells = []
        for impl in impls:
            v = m.get(impl, {}).get(w)
            ratio = "" if v is None or w not in ref else f" ({v / ref[w]:.2f}x)"
            cells.append(cell(v, summary.get(impl, {}), w, ratio))
        ll = m.get("pyfuse-ll", {}).get(w)
        peers = [m[i][w] for i in ("llfuse", "pyfuse3") if w in m.get(i, {})]
        standing = f"{ll / min(peers):.2f}" if ll is not None and peers else ""
        if w == "W5" and w in ref:
            standing += "".join(
                f"; {who} <= {limit:.2f}x " + ("met" if m[who][w] / ref[w] <= limit else "missed")
                for who, limit in W5_LIMITS.items() if w in m.get(who, {}))
        lines.append(f"| {w} | " + " | ".join(cells) + f" | {standing} |")
    return lines + [""]
