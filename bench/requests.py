"""Requests per workload for each implementation: how many FUSE requests the kernel sends for
one iteration of each workload of the tree suite, counted from libfuse's own request trace
(each daemon started with --debug: libfuse's ``-d``, which pyfuse logs and the peers' libfuse
prints; one ``opcode:`` line a request).

    python bench/requests.py [--impl cref,cref-ll,pyfuse,...] [--workload W1,W3nw,...]

Each group of bench/suites.py's GROUPS (the same daemon flags) mounts every implementation,
runs each workload once to warm up (W2 then takes the next of its directories), then once
more, counting the requests of that second iteration. W2 lists one directory an iteration,
walk 4,161: the table also gives walk's requests per directory. Prints a Markdown table
(docs/benchmarks.md keeps the one this made).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.suites import GROUPS, IMPLS, build_cref  # noqa: E402
from bench.workloads import WORKLOADS  # noqa: E402
from pyfuse import testing  # noqa: E402

WALK_DIRS = 1 + 64 + 64 * 64


def _count(log: str) -> int:
    with open(log, errors="replace") as f:
        return sum(1 for line in f if "opcode: " in line)


def _settle(log: str) -> int:
    """The count once the trace has stopped growing (late RELEASEDIRs and FORGETs)."""
    last = -1
    n = _count(log)
    while n != last:
        time.sleep(0.3)
        last, n = n, _count(log)
    return n


def measure(impls: list[str], workloads: list[str]) -> dict[tuple[str, str], object]:
    out: dict[tuple[str, str], object] = {}
    for group, flags in GROUPS:
        wanted = [w for w in group if w in workloads]
        if not wanted:
            continue
        for impl in impls:
            mnt = tempfile.mkdtemp(prefix=f"req-{impl}-")
            log = mnt + ".log"
            try:
                with testing.mounted_process(IMPLS[impl] + [mnt, *flags, "--debug"], mnt,
                                             log=log, timeout=30):
                    for w in wanted:
                        WORKLOADS[w](mnt)
                        before = _settle(log)
                        WORKLOADS[w](mnt)
                        out[impl, w] = _settle(log) - before
            except Exception as e:  # a peer that does not mount: say so
                for w in wanted:
                    out[impl, w] = f"failed: {type(e).__name__}"
            finally:
                os.rmdir(mnt)
                if os.path.exists(log):
                    os.unlink(log)
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--impl", default="cref,cref-ll,pyfuse,pyfuse-ll,pyfuse3,llfuse,fusepy,"
                                     "mfusepy,pyfuse-compat,pyfuse3-compat,llfuse-compat")
    p.add_argument("--workload", default="W1,W5,W2,W3n,W3s,walk,W3nw,walkw")
    a = p.parse_args(argv)
    build_cref()
    impls, workloads = a.impl.split(","), a.workload.split(",")
    out = measure(impls, workloads)
    print("| workload | " + " | ".join(impls) + " |")
    print("|---" * (len(impls) + 1) + "|")
    for w in workloads:
        cells = []
        for impl in impls:
            v = out.get((impl, w), "")
            if isinstance(v, int) and w.startswith("walk"):
                cells.append(f"{v} ({v / WALK_DIRS:.1f}/dir)")
            else:
                cells.append(str(v))
        print(f"| {w} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
