"""docs/benchmarks.md and its charts from bench/results: the tree suite's table, the requests
each workload sends, the daemons' RSS, then the data, floor, aio and pinned sections."""
from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
from typing import Any

from bench import aio, pinned
from bench.suites import (
    DATA_IMPLS,
    DATA_TARGETS,
    DATA_WORKLOADS,
    FLOOR_GROUPS,
    FLOOR_IMPLS,
    GROUPS,
    IMPLS,
    PY,
    RESULTS,
    ROOT,
    TARGETS,
)


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
             "(bench/floor.py): pyfuse-cffi answers constants without calling the "
             "filesystem (what an `extern \"Python\"` callback costs by itself); pyfuse-fs "
             "runs the filesystem's own getattr/readdir first, then answers getattr with the "
             "filesystem's Attr as pyfuse does and readdir with the same constant listing "
             "(what pyfuse would measure if its own checks and conversions cost nothing). So "
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
