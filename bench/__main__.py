"""Run the comparison: ``python -m bench [--suite tree,data,floor,aio,pinned]
[--fast|--rigorous] [--impl a,b] [--workload W1,...] [--cpu N]``.

For each workload group: mount every implementation at once (the synthetic tree of
bench/model.py for the tree and floor suites; passthrough filesystems for the data suite), then
run bench/workloads.py under pyperf in rounds, one worker process per implementation and
workload per round, in rotating order, appending to each implementation's pyperf JSON; read the
daemons' RSS; unmount. Interleaving makes the machine's drift hit every implementation alike.
The pinned suite (bench/pinned.py) runs tree groups again with the client and the daemons on
CPU N alone. Results: bench/results/*.json, summary.json, data-summary.json, floor-summary.json,
aio-summary.json, pinned-summary.json, docs/benchmarks.md and its charts. A peer that does not
install or mount is reported as such, never faked.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

from bench import aio, pinned

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
CREF = os.path.join(HERE, "build", "cref")
CREF_LL = os.path.join(HERE, "build", "cref_ll")
PY = sys.executable

IMPLS: dict[str, list[str]] = {
    "cref": [CREF],
    # the same tree on libfuse's low-level API, numbered as the inode API's peers number it
    "cref-ll": [CREF_LL],
    # bench/tree.py and bench/tree_ll.py as the docs teach (Attr objects, generators of tuples)
    "pyfuse": [PY, os.path.join(HERE, "tree.py")],
    # the binding's own cost: /big's readdir returns a prepared list of tuples
    "pyfuse-prepared": [PY, os.path.join(HERE, "tree.py"), "--prepared"],
    # the same tree through the inode API (pyfuse.lowlevel), numbered as the low-level peers
    "pyfuse-ll": [PY, os.path.join(HERE, "tree_ll.py")],
    # labelled extras, tuned beyond what the docs teach: listings of plain tuples (tree.py),
    # built by C iterators from one attribute template (tree_ll.py)
    "pyfuse-tuned": [PY, os.path.join(HERE, "tree.py"), "--tuned"],
    "pyfuse-ll-tuned": [PY, os.path.join(HERE, "tree_ll.py"), "--tuned"],
    "pyfuse3": [PY, "-m", "bench.peers.pyfuse3_tree"],
    "llfuse": [PY, "-m", "bench.peers.llfuse_tree"],
    "mfusepy": [PY, "-m", "bench.peers.mfusepy_tree"],
    "fusepy": [PY, "-m", "bench.peers.fusepy_tree"],
    # bench/peers' fusepy filesystem, unchanged, through pyfuse.compat's runner
    "pyfuse-compat": [PY, "-m", "pyfuse.compat", "-m", "bench.peers.fusepy_tree"],
    # bench/peers' pyfuse3 and llfuse filesystems, unchanged, through the runner
    "pyfuse3-compat": [PY, "-m", "pyfuse.compat", "-m", "bench.peers.pyfuse3_tree"],
    "llfuse-compat": [PY, "-m", "pyfuse.compat", "-m", "bench.peers.llfuse_tree"],
}
# (workloads, daemon flags). W1/W5: single-threaded, caching off (the targets); W1mt/W5mt: the
# same on the default multi-threaded loop. W2, W3 and walk: default caching, on the default loop
# (the targets) and single-threaded (suffix st). See bench/workloads.py.
GROUPS: list[tuple[list[str], list[str]]] = [
    (["W1", "W5"], ["--single", "--nocache"]),
    (["W1mt", "W5mt"], ["--nocache"]),
    (["W2", "W3n", "W3s", "walk"], []),
    (["W2st", "W3nst", "W3sst", "walkst"], ["--single"]),
    # warm: daemons that can ask the kernel to keep their listings do (--dircache); the peers'
    # APIs cannot, and list as they always do
    (["W3nw", "walkw"], ["--dircache", "--longcache"]),
]
# Rounds: each is one pyperf worker process per implementation and workload (pyperf's default
# is 20 processes, --fast 10). Workloads that take seconds (the walk, the data suite) run fewer.
ROUNDS = {"fast": 8, "default": 16, "rigorous": 32}
SLOW = {"walk", "walkst"}
# Targets of issue 3, as ratios to the C reference (W3n: the binding's own cost, measured with
# the prepared listing).
# pyfuse-compat (issue 15): W2 and W3s <= 1.5. pyfuse-ll (issue 14): W3s and walk <= 0.95, W2
# <= 1.20, W1 and W5 no slower than the path API (a limit named by an implementation: at most
# its ratio).
TARGETS: dict[str, list[tuple[str, Any]]] = {
    "W1": [("pyfuse", 1.10), ("pyfuse-ll", "pyfuse")],
    "W5": [("pyfuse", 1.15), ("pyfuse-ll", "pyfuse")],
    "W2": [("pyfuse", 1.20), ("pyfuse-compat", 1.5), ("pyfuse-ll", 1.20)],
    "W3s": [("pyfuse", 1.15), ("pyfuse-compat", 1.5), ("pyfuse-ll", 0.95)],
    "walk": [("pyfuse-ll", 0.95)], "W3n": [("pyfuse-prepared", 1.5)],
    # issue 29: within 1.2x of a C daemon with the same flags (cref-ll --dircache)
    "W3nw": [("pyfuse-ll", "1.2 cref-ll")]}

# The floor suite: the same tree with pyfuse's getattr and readdir callbacks cut down to what a
# cffi callback costs by itself (pyfuse-cffi) and to the filesystem's own code with free
# conversions (pyfuse-fs); see bench/floor.py. Only the workloads whose targets are per request.
FLOOR_IMPLS: dict[str, list[str]] = {
    "cref": [CREF],
    "pyfuse": IMPLS["pyfuse"],
    "pyfuse-fs": [PY, os.path.join(HERE, "floor.py"), "--fs"],
    "pyfuse-cffi": [PY, os.path.join(HERE, "floor.py"), "--cffi"],
}
FLOOR_GROUPS: list[tuple[list[str], list[str]]] = [
    (["W1", "W5"], ["--single", "--nocache"]),
    (["W2st"], ["--single"]),
]

# The data suite (issue 4): passthrough filesystems over a source directory in /dev/shm, on
# their default (multi-threaded) loop; the client uses O_DIRECT (bench/workloads.py). cref is
# libfuse's own example/passthrough.c, compiled at bench time from the libfuse3-dev package (it
# mirrors "/", so its clients use MNT/SRC). pyfuse-memory: the memory example, which stores the
# data itself.
PASSTHROUGH_C = "/usr/share/doc/libfuse3-dev/examples/passthrough.c"
CPASS = os.path.join(HERE, "build", "passthrough")
DATA_IMPLS: dict[str, list[str]] = {
    "cref": [CPASS, "-f", "-o", "fsname=cpass", "{mnt}"],
    "pyfuse": [PY, "-m", "pyfuse.examples.passthrough", "{src}", "{mnt}"],
    "pyfuse-memory": [PY, "-m", "pyfuse.examples.memory", "{mnt}"],
    "pyfuse3": [PY, "-m", "bench.peers.passthrough", "pyfuse3", "{src}", "{mnt}"],
    "llfuse": [PY, "-m", "bench.peers.passthrough", "llfuse", "{src}", "{mnt}"],
    "mfusepy": [PY, "-m", "bench.peers.passthrough", "mfusepy", "{src}", "{mnt}"],
}
DATA_WORKLOADS = ["seqwrite", "seqread", "rand1", "rand4"]
# Targets of issue 4, as speed relative to the C reference (C time / pyfuse time).
DATA_TARGETS = {"seqwrite": 0.95, "seqread": 0.95, "rand1": 0.85, "rand4": 0.8}


def build_cref() -> None:
    os.makedirs(os.path.dirname(CREF), exist_ok=True)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], check=True,
                           capture_output=True, text=True).stdout.split()
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-o", CREF,
                    os.path.join(HERE, "cref.c"), *flags], check=True)
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-o", CREF_LL,
                    os.path.join(HERE, "cref_ll.c"), *flags], check=True)
    if os.path.exists(PASSTHROUGH_C):
        subprocess.run(["cc", "-O2", "-o", CPASS, PASSTHROUGH_C,
                        "-I" + os.path.dirname(PASSTHROUGH_C), *flags], check=True)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Mounted:
    """One implementation mounted for a group of workloads."""

    def __init__(self, impl: str, argv: list[str], mnt: str, where: str, out: str, log: str,
                 entry: dict[str, Any]) -> None:
        self.impl, self.argv, self.mnt, self.where, self.out = impl, argv, mnt, where, out
        self.log, self.entry = log, entry
        self.proc: Any = None


def run_interleaved(mounts: list[Mounted], workloads: list[str], rounds: int,
                    pyperf_args: list[str], rss_after: tuple[str, ...] = ()) -> None:
    """Mount every implementation, then run the workloads in rounds, each round one pyperf
    worker process per implementation in rotating order, appended to the implementation's
    JSON: drift of the machine (other tenants, frequency) then hits every implementation alike."""
    from pyfuse import testing

    with contextlib.ExitStack() as stack:
        live = []
        for m in mounts:
            try:
                m.proc = stack.enter_context(testing.mounted_process(m.argv, m.mnt, log=m.log))
                live.append(m)
            except Exception as e:  # a peer that does not mount: say so
                m.entry["error"] = f"{type(e).__name__}: {str(e).splitlines()[0]}"
                print(f"!! {m.impl}: {m.entry['error']}", flush=True)
        for r in range(rounds):
            for w in workloads:
                k = r % max(len(live), 1)
                for m in live[k:] + live[:k]:
                    print(f"== round {r + 1}/{rounds} {w} {m.impl}", flush=True)
                    before = rss_kib(m.proc.pid)
                    res = subprocess.run([PY, os.path.join(HERE, "workloads.py"), "--mount",
                                          m.where, "--workload", w, "--append", m.out,
                                          "--quiet", "--processes", "1", *pyperf_args],
                                         cwd=ROOT)
                    if res.returncode != 0:
                        m.entry[w] = f"failed (exit {res.returncode})"
                    if w == "seqwrite" and r == 0:
                        m.entry["rss_seqwrite_kib"] = [before, rss_kib(m.proc.pid)]
        for m in live:
            for w in rss_after:
                if w in workloads:
                    m.entry[f"rss_after_{w}_kib"] = rss_kib(m.proc.pid)


def run_tree_group(impls: list[str], workloads: list[str], flags: list[str], rounds: int,
                   pyperf_args: list[str], summary: dict[str, Any],
                   table: dict[str, list[str]] = IMPLS, prefix: str = "") -> None:
    """One group of the tree (or floor) suite: every implementation of ``table`` mounted with the
    group's flags; results in bench/results/PREFIXIMPL.json."""
    dirs = [tempfile.mkdtemp(prefix=f"bench-{impl}-") for impl in impls]
    try:
        mounts = [Mounted(impl, table[impl] + [mnt] + flags, mnt, mnt,
                          os.path.join(RESULTS, f"{prefix}{impl}.json"),
                          os.path.join(RESULTS, f"{prefix}{impl}.log"),
                          summary.setdefault(impl, {}))
                  for impl, mnt in zip(impls, dirs)]
        run_interleaved(mounts, workloads, rounds, pyperf_args,
                        ("W3s", "walk", "W3sst", "walkst"))
    finally:
        for d in dirs:
            os.rmdir(d)


def run_data(impls: list[str], rounds: int, pyperf_args: list[str],
             summary: dict[str, Any]) -> None:
    """The data suite: DATA_IMPLS mounted over fresh sources in /dev/shm."""
    mounts, dirs = [], []
    for impl in impls:
        mnt = tempfile.mkdtemp(prefix=f"bench-data-{impl}-")
        src = tempfile.mkdtemp(prefix=f"bench-src-{impl}-", dir="/dev/shm")
        dirs.append((mnt, src))
        entry = summary.setdefault(impl, {})
        if impl == "cref" and not os.path.exists(CPASS):
            entry["error"] = f"{PASSTHROUGH_C} is missing (apt-get install libfuse3-dev)"
            continue
        mounts.append(Mounted(impl, [a.format(mnt=mnt, src=src) for a in DATA_IMPLS[impl]], mnt,
                              mnt + src if impl == "cref" else mnt,
                              os.path.join(RESULTS, f"data-{impl}.json"),
                              os.path.join(RESULTS, f"data-{impl}.log"), entry))
    try:
        run_interleaved(mounts, DATA_WORKLOADS, rounds, pyperf_args)
    finally:
        for mnt, src in dirs:
            os.rmdir(mnt)
            shutil.rmtree(src, ignore_errors=True)


def means(prefix: str = "", impls: Any = IMPLS) -> dict[str, dict[str, float]]:
    import pyperf

    out: dict[str, dict[str, float]] = {}
    for impl in impls:
        path = os.path.join(RESULTS, f"{prefix}{impl}.json")
        if os.path.exists(path):
            suite = pyperf.BenchmarkSuite.load(path)
            out[impl] = {b.get_name(): b.mean() for b in suite.get_benchmarks()}
    return out


def _cell(v: Any, entry: dict[str, Any], w: str, ratio: str) -> str:
    """A table cell: the mean time and its ratio, or why there is none."""
    if v is None:
        return str(entry.get(w) or entry.get("error", "not run"))
    return (f"{v * 1e6:.1f} us" if v < 1e-3 else f"{v * 1e3:.2f} ms") + ratio


def _header(impls: list[str], last: str) -> list[str]:
    """A results table's header: workload, the implementations, then ``last``."""
    return ["| workload | " + " | ".join(impls) + f" | {last} |", "|---" * (len(impls) + 2) + "|"]


def _cells(m: dict[str, dict[str, float]], ref: dict[str, float], impls: list[str], w: str,
           entries: dict[str, Any], speed: bool = False) -> list[str]:
    """One table row: each implementation's mean for workload w and, in brackets, its ratio to
    cref (``speed``: cref's time / its time, higher is better)."""
    cells = []
    for impl in impls:
        v = m.get(impl, {}).get(w)
        ratio = "" if v is None or w not in ref else \
            f" ({(ref[w] / v if speed else v / ref[w]):.2f}x)"
        cells.append(_cell(v, entries.get(impl, {}), w, ratio))
    return cells


def report(summary: dict[str, Any], data: dict[str, Any], floor: dict[str, Any],
           aio_summary: dict[str, Any], pinned_summary: dict[str, Any]) -> None:
    command = summary.get("_command", "python -m bench --suite tree")
    m = means()
    ref = m.get("cref", {})
    workloads = [w for ws, _ in GROUPS for w in ws]
    lines = ["# Benchmarks", "",
             f"Made by `{command}`, started {summary.get('_date', 'at an earlier date')}; "
             "re-running it rewrites this page, bench/results/ and the charts (a run of one "
             "suite keeps the others' sections).", "",
             f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Linux {platform.release()}, "
             f"Python {platform.python_version()}; libfuse "
             + subprocess.run(["pkg-config", "--modversion", "fuse3"], capture_output=True,
                              text=True).stdout.strip() + ".", "",
             "Each cell: mean time per operation (pyperf), and in brackets the ratio to the C "
             "reference (bench/cref.c, libfuse 3 high-level API, readdirplus in offset mode) "
             "measured in the same run. Lower is better. W1/W5: single-threaded loop, caching "
             "off; W1mt/W5mt: the same on the default multi-threaded loop. W2, W3 and walk: "
             "default caching (1 s), on the default loop and, with the suffix st, "
             "single-threaded. The workloads: bench/workloads.py; the tree: bench/model.py.", "",
             "Noise: the implementations are mounted together and measured in interleaved "
             "rounds, so drift of this 2-vCPU VM hits all of them alike; what remains shows in "
             "pyfuse vs pyfuse-prepared on W1, W5, W1mt, W5mt and W2, where both run identical "
             "code (differences up to 15 % with `--fast`). Prefer `BENCH_ARGS=--rigorous` for "
             "decisions.",
             ""]
    impls = [i for i in IMPLS if i in m or i in summary]
    measured = summary.get("_impls")
    if measured:  # a run of some implementations: the others' results are another run's
        stale = [i for i in impls if i not in measured]
        impls = [i for i in impls if i in measured]
        if stale:
            lines += [f"This run measured {', '.join(impls)}; the results of "
                      f"{', '.join(stale)} in bench/results are from an earlier run and are "
                      "left out (their ratios were to that run's cref).", ""]
    lines += _header(impls, "target")
    for w in workloads:
        cells = _cells(m, ref, impls, w, summary)
        targets = []
        for who, limit in TARGETS.get(w, []):
            if who not in impls:
                continue
            v = m.get(who, {}).get(w)
            label = f"{limit:.2f}x" if isinstance(limit, float) else limit
            if isinstance(limit, str):  # "[factor ]impl": no slower than (factor times) impl
                factor, _, other = limit.rpartition(" ")
                limit = float(factor or 1) * m.get(other, {}).get(w, 0) / ref[w] \
                    if w in ref else 0
            met = "" if v is None or w not in ref or not limit else \
                (" met" if v / ref[w] <= limit else " missed")
            targets.append(f"{who} <= {label}{met}")
        target = "; ".join(targets)
        lines.append(f"| {w} | " + " | ".join(cells) + f" | {target} |")
    requests = summary.get("_requests", {})
    if requests:
        lines += ["", "Requests the kernel sent for one iteration of each workload (after one to "
                  "warm up), from libfuse's own request trace (`python bench/requests.py`, run "
                  "by the same command; walk: also per directory, of 4,161):", ""]
        lines += _header(impls, "")
        for w in workloads:
            row = []
            for impl in impls:
                n = requests.get(f"{impl}|{w}", "")
                row.append(f"{n} ({n / 4161:.1f}/dir)" if isinstance(n, int) and
                           w.startswith("walk") else str(n))
            lines.append(f"| {w} | " + " | ".join(row) + " | |")
    lines += ["", "Daemon RSS (MiB) after the big listings:", "",
              "| after | " + " | ".join(impls) + " |", "|---" * (len(impls) + 1) + "|"]
    for k in ("W3s", "walk", "W3sst", "walkst"):
        kib = [summary.get(i, {}).get(f"rss_after_{k}_kib") for i in impls]
        lines.append(f"| {k} | " + " | ".join(f"{x / 1024:.1f}" if x else "" for x in kib)
                     + " |")
    versions = []
    for dist in ("pyperf", "pyfuse3", "llfuse", "mfusepy", "fusepy"):
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            version = "not installed"
        versions.append(f"{dist} {version}")
    present = [f"{i}.json" for i in impls if os.path.exists(os.path.join(RESULTS, f"{i}.json"))]
    table = subprocess.run([PY, "-m", "pyperf", "compare_to", *present, "--table"],
                           cwd=RESULTS, capture_output=True, text=True).stdout
    lines += ["", "`pyperf compare_to " + " ".join(present) + " --table` (in bench/results):",
              "", "```", table.rstrip(), "```"]
    lines += ["", "Versions: " + ", ".join(versions) + ".", "",
              "![ratio to the C reference](benchmarks.png)", "",
              "Where the time goes, the targets and what is left: [performance.md]"
              "(performance.md).", ""]
    lines += report_data(data)
    lines += report_floor(floor)
    lines += aio.report(aio_summary, means)
    lines += pinned.report(pinned_summary, means, _cell)
    with open(os.path.join(ROOT, "docs", "benchmarks.md"), "w") as f:
        f.write("\n".join(lines))
    chart(m, workloads, "benchmarks.png")


def report_data(data: dict[str, Any]) -> list[str]:
    """The data-path section (issue 4): speed relative to libfuse's passthrough.c."""
    m = means("data-", DATA_IMPLS)
    ref = m.get("cref", {})
    impls = [i for i in DATA_IMPLS if i in m or i in data]
    lines = ["## Data path", "",
             f"Made by `{data.get('_command', 'python -m bench --suite data')}`, started "
             f"{data.get('_date', 'at an earlier date')}. "
             "Passthrough filesystems over a source directory in /dev/shm (tmpfs), on their "
             "default multi-threaded loop; the client opens files with O_DIRECT and page-aligned "
             "buffers, so each read(2)/write(2) is requests of that size. cref is libfuse's "
             "example/passthrough.c (pread/pwrite), compiled from the libfuse3-dev package at "
             "bench time; pyfuse is pyfuse.examples.passthrough (FdRange reads, write_fd "
             "writes, splice); the peers "
             "are bench/peers/passthrough.py (os.pread/os.pwrite); pyfuse-memory is the memory "
             "example, which keeps the data in its own process. Workloads (bench/workloads.py, "
             "a Python client): seqwrite/seqread 1 GiB in 1 MiB calls (time per GiB), rand1 "
             "4 KiB preads at random aligned offsets, rand4 the same from 4 threads (time per "
             "read). Each cell: mean time, and in brackets the speed relative to cref (cref "
             "time / time; higher is better).", "",
             *_header(impls, "target (pyfuse)")]
    for w in DATA_WORKLOADS:
        cells = _cells(m, ref, impls, w, data, speed=True)
        v, limit = m.get("pyfuse", {}).get(w), DATA_TARGETS[w]
        met = "" if v is None or w not in ref else (" met" if ref[w] / v >= limit else " missed")
        lines.append(f"| {w} | " + " | ".join(cells) + f" | >= {limit:.2f}x{met} |")
    lines += ["", "Daemon RSS (MiB) before / after seqwrite (the memory example stores the "
              "1 GiB it is given):", "", "| | " + " | ".join(impls) + " |",
              "|---" * (len(impls) + 1) + "|"]
    rss = [data.get(i, {}).get("rss_seqwrite_kib") for i in impls]
    lines.append("| RSS | " + " | ".join(f"{r[0] / 1024:.0f} / {r[1] / 1024:.0f}" if r else ""
                                        for r in rss) + " |")
    lines += ["", "![speed relative to passthrough.c](benchmarks-data.png)", ""]
    if m:
        chart({i: {w: ref[w] / v for w, v in ws.items() if w in ref} for i, ws in m.items()},
              DATA_WORKLOADS, "benchmarks-data.png", "speed relative to passthrough.c "
              "(higher is better)", log=False)
    return lines


def report_floor(floor: dict[str, Any]) -> list[str]:
    """The floor section: where W1, W5 and W2's time goes (bench/floor.py)."""
    m = means("floor-", FLOOR_IMPLS)
    ref = m.get("cref", {})
    impls = [i for i in FLOOR_IMPLS if i in m or i in floor]
    if not impls:
        return []
    workloads = [w for ws, _ in FLOOR_GROUPS for w in ws]
    lines = ["## The floor of the design", "",
             f"Made by `{floor.get('_command', 'python -m bench --suite floor')}`, started "
             f"{floor.get('_date', 'at an earlier date')}. The same "
             "tree, measured the same way, with pyfuse's getattr and readdir callbacks cut down "
             "(bench/floor.py): pyfuse-cffi copies constant answers into C without calling the "
             "filesystem (what an `extern \"Python\"` callback costs by itself); pyfuse-fs "
             "runs the filesystem's own getattr/readdir and then answers with the same "
             "constants (what pyfuse would measure if its conversions cost nothing). So "
             "pyfuse-cffi minus 1 is the crossing into Python, pyfuse-fs minus pyfuse-cffi the "
             "filesystem's code with the session look-up and the path decoding, and pyfuse "
             "minus pyfuse-fs pyfuse's own conversions. W1 and W5 single-threaded with caching "
             "off, W2st single-threaded with default caching (the W2 target is set on the "
             "default loop).", "",
             *_header(impls, "target (pyfuse)")]
    for w in workloads:
        cells = _cells(m, ref, impls, w, floor)
        limit = float(TARGETS[w.removesuffix("st")][0][1])  # pyfuse's
        where = ""
        if w in ref and all(w in m.get(i, {}) for i in ("pyfuse-cffi", "pyfuse-fs")):
            cffi, fs = m["pyfuse-cffi"][w] / ref[w], m["pyfuse-fs"][w] / ref[w]
            if limit < cffi:
                where = f": below pyfuse-cffi ({cffi:.3f}x)"
            elif limit < fs:
                where = f": below pyfuse-fs ({fs:.3f}x)"
            else:
                where = f": above pyfuse-fs ({fs:.3f}x)"
        lines.append(f"| {w} | " + " | ".join(cells) + f" | <= {limit:.2f}x{where} |")
    return lines + [""]


def chart(m: dict[str, dict[str, float]], workloads: list[str], name: str,
          ylabel: str = "time / C reference (lower is better)", log: bool = True) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ref = m.get("cref", {}) if log else {w: 1.0 for w in workloads}
    impls = list(m)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / max(len(impls), 1)
    for k, impl in enumerate(impls):
        xs, ys = [], []
        for j, w in enumerate(workloads):
            if w in m[impl] and w in ref:
                xs.append(j + k * width)
                ys.append(m[impl][w] / ref[w] if log else m[impl][w])
        ax.bar(xs, ys, width, label=impl)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(workloads))], workloads)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(ROOT, "docs", name), dpi=100)


def _load(path: str, drop: list[str]) -> dict[str, Any]:
    if not os.path.exists(path):
        return {}
    with open(path) as f:  # keep the entries of implementations not run now
        return {k: v for k, v in json.load(f).items() if k not in drop}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--suite", default="tree,data,floor,aio,pinned",
                   help="tree (issue 3), data (issue 4), floor (bench/floor.py), aio "
                        "(bench/aio.py: many slow reads at once), pinned (bench/pinned.py: "
                        "the tree on one CPU)")
    p.add_argument("--cpu", type=int, default=pinned.default_cpu(), help="the pinned suite's")
    p.add_argument("--impl", default="", help="default: all of the suite's")
    p.add_argument("--workload", default="")
    p.add_argument("--fast", action="store_true", help="fewer rounds and values")
    p.add_argument("--rigorous", action="store_true", help="more rounds")
    a = p.parse_args()
    os.makedirs(RESULTS, exist_ok=True)
    build_cref()
    suites = set(a.suite.split(","))
    chosen = [i for i in a.impl.split(",") if i]
    only = set(filter(None, a.workload.split(",")))
    mode = "fast" if a.fast else "rigorous" if a.rigorous else "default"
    rounds = ROUNDS[mode]
    pyperf_args = ["--values", "2"] if a.fast else []
    command = "python -m bench " + " ".join(sys.argv[1:])
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    summary_path = os.path.join(RESULTS, "summary.json")
    data_path = os.path.join(RESULTS, "data-summary.json")
    floor_path = os.path.join(RESULTS, "floor-summary.json")
    aio_path = os.path.join(RESULTS, "aio-summary.json")
    pinned_path = os.path.join(RESULTS, "pinned-summary.json")

    def start(table: dict[str, list[str]], prefix: str, path: str
              ) -> tuple[list[str], dict[str, Any]]:
        """A suite's implementations (the chosen ones, or all), with their old results removed,
        and its summary (other implementations' entries kept)."""
        impls = [i for i in chosen or table if i in table]
        for impl in impls:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(RESULTS, f"{prefix}{impl}.json"))
        summary = _load(path, impls)
        summary["_command"], summary["_date"] = command, started
        summary["_impls"] = impls
        return impls, summary

    def save(path: str, summary: dict[str, Any]) -> None:
        with open(path, "w") as f:
            json.dump(summary, f, indent=1, sort_keys=True)

    if "tree" in suites:
        impls, summary = start(IMPLS, "", summary_path)
        for workloads, flags in GROUPS:
            ws = [w for w in workloads if not only or w in only]
            fast = [w for w in ws if w not in SLOW]
            slow = [w for w in ws if w in SLOW]
            if fast:
                run_tree_group(impls, fast, flags, rounds, pyperf_args, summary)
            if slow:
                run_tree_group(impls, slow, flags, max(rounds // 4, 2), pyperf_args, summary)
        from bench.requests import measure  # what each iteration asks of the daemon
        counted = measure(impls, [w for ws, _ in GROUPS for w in ws if not only or w in only])
        summary["_requests"] = {f"{i}|{w}": n for (i, w), n in counted.items()}
        save(summary_path, summary)
    if "data" in suites:
        impls, data = start(DATA_IMPLS, "data-", data_path)
        run_data(impls, max(rounds // 2, 3), pyperf_args, data)
        save(data_path, data)
    if "floor" in suites:
        impls, floor = start(FLOOR_IMPLS, "floor-", floor_path)
        for workloads, flags in FLOOR_GROUPS:
            ws = [w for w in workloads if not only or w in only]
            if ws:
                run_tree_group(impls, ws, flags, rounds, pyperf_args, floor, FLOOR_IMPLS,
                               "floor-")
        save(floor_path, floor)
    if "aio" in suites:
        impls, aio_summary = start(aio.AIO_IMPLS, "aio-", aio_path)
        aio.run(impls, max(rounds // 2, 3), pyperf_args, aio_summary)
        save(aio_path, aio_summary)
    if "pinned" in suites:
        impls, one = start({i: IMPLS[i] for i in pinned.IMPLS}, "pinned-", pinned_path)
        one["_cpu"] = a.cpu
        with pinned.one_cpu(a.cpu):
            for workloads, flags in pinned.GROUPS:
                ws = [w for w in workloads if not only or w in only]
                if ws:
                    run_tree_group(impls, ws, flags, rounds, pyperf_args, one, IMPLS, "pinned-")
        save(pinned_path, one)
    report(_load(summary_path, []), _load(data_path, []), _load(floor_path, []),
           _load(aio_path, []), _load(pinned_path, []))
    with open(os.path.join(ROOT, "docs", "benchmarks.md")) as f:
        print(f.read())


if __name__ == "__main__":
    main()
