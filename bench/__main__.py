"""Run the comparison: ``python -m bench [--fast] [--impl a,b] [--workload W1,...]``.

For each workload group and each implementation: mount the synthetic tree (bench/cref.c) with
that implementation, run bench/workloads.py under pyperf against the live mount, read the
daemon's RSS, unmount. Results: bench/results/<impl>.json (pyperf), bench/results/summary.json,
and docs/benchmarks.md with the ratio table and docs/benchmarks.png. A peer that does not
install or mount is reported as such, never faked.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
CREF = os.path.join(HERE, "build", "cref")
PY = sys.executable

IMPLS: dict[str, list[str]] = {
    "cref": [CREF],
    "pyfuse": [PY, os.path.join(HERE, "tree.py")],
    # the binding's own cost: /big's readdir returns a prepared list of DirEntry objects
    "pyfuse-prepared": [PY, os.path.join(HERE, "tree.py"), "--prepared"],
    "pyfuse3": [PY, "-m", "bench.peers.pyfuse3_tree"],
    "llfuse": [PY, "-m", "bench.peers.llfuse_tree"],
    "mfusepy": [PY, "-m", "bench.peers.mfusepy_tree"],
    "fusepy": [PY, "-m", "bench.peers.fusepy_tree"],
}
# (workload, daemon flags): W1 and W5 single-threaded with caching off, the rest default.
# W1mt/W5mt: the same as W1/W5 on the default (multi-threaded) loop.
GROUPS: list[tuple[list[str], list[str]]] = [
    (["W1", "W5"], ["--single", "--nocache"]),
    (["W1mt", "W5mt"], ["--nocache"]),
    (["W3n", "W3s"], []),
]


def build_cref() -> None:
    os.makedirs(os.path.dirname(CREF), exist_ok=True)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], check=True,
                           capture_output=True, text=True).stdout.split()
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-o", CREF,
                    os.path.join(HERE, "cref.c"), *flags], check=True)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def run_group(impl: str, workloads: list[str], flags: list[str], pyperf_args: list[str],
              summary: dict[str, Any]) -> None:
    from pyfuse import testing

    mnt = tempfile.mkdtemp(prefix=f"bench-{impl}-")
    log = os.path.join(RESULTS, f"{impl}.log")
    out = os.path.join(RESULTS, f"{impl}.json")
    entry = summary.setdefault(impl, {})
    try:
        with testing.mounted_process(IMPLS[impl] + [mnt] + flags, mnt, log=log) as proc:
            for w in workloads:
                print(f"== {impl} {w}", flush=True)
                r = subprocess.run([PY, os.path.join(HERE, "workloads.py"), "--mount", mnt,
                                    "--workload", w, "--append", out, "--quiet",
                                    *pyperf_args], cwd=ROOT)
                if r.returncode != 0:
                    entry[w] = f"failed (exit {r.returncode})"
                if w.startswith("W3"):
                    entry[f"rss_after_{w}_kib"] = rss_kib(proc.pid)
    except Exception as e:  # a peer that does not mount: say so
        entry["error"] = f"{type(e).__name__}: {str(e).splitlines()[0]}"
        print(f"!! {impl}: {entry['error']}", flush=True)
    finally:
        os.rmdir(mnt)


def means() -> dict[str, dict[str, float]]:
    import pyperf

    out: dict[str, dict[str, float]] = {}
    for impl in IMPLS:
        path = os.path.join(RESULTS, f"{impl}.json")
        if os.path.exists(path):
            suite = pyperf.BenchmarkSuite.load(path)
            out[impl] = {b.get_name(): b.mean() for b in suite.get_benchmarks()}
    return out


def report(summary: dict[str, Any], command: str) -> None:
    m = means()
    ref = m.get("cref", {})
    workloads = [w for ws, _ in GROUPS for w in ws]
    lines = ["# Benchmarks", "",
             f"Made by `{command}` on {time.strftime('%Y-%m-%d')}; re-running it rewrites this "
             "page, bench/results/ and the chart.", "",
             f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Linux {platform.release()}, "
             f"Python {platform.python_version()}; libfuse "
             + subprocess.run(["pkg-config", "--modversion", "fuse3"], capture_output=True,
                              text=True).stdout.strip() + ".", "",
             "Each cell: mean time per operation (pyperf), and in brackets the ratio to the C "
             "reference (bench/cref.c, libfuse 3 high-level API, readdirplus in offset mode) "
             "measured in the same run. Lower is better. W1/W5: single-threaded loop, caching "
             "off; W1mt/W5mt: the same on the default multi-threaded loop. W3: default loop and "
             "caching.", "",
             "Noise: with `--fast` on this 2-vCPU machine, run-to-run differences of 20-40 % "
             "are common on W1/W5 (pyfuse and pyfuse-prepared run identical code there); "
             "compare rows within one run and prefer `BENCH_ARGS=--rigorous` for decisions.", "",
             "| implementation | " + " | ".join(workloads) + " | RSS after W3 (MiB) |",
             "|---" * (len(workloads) + 2) + "|"]
    for impl in IMPLS:
        cells = []
        for w in workloads:
            v = m.get(impl, {}).get(w)
            if v is None:
                cells.append(str(summary.get(impl, {}).get(w) or summary.get(impl, {}).get(
                    "error", "not run")))
            else:
                ratio = f" ({v / ref[w]:.2f}x)" if w in ref else ""
                cells.append(f"{v * 1e6:.1f} us{ratio}" if v < 1e-3 else
                             f"{v * 1e3:.2f} ms{ratio}")
        rss = summary.get(impl, {}).get("rss_after_W3s_kib")
        cells.append(f"{rss / 1024:.1f}" if rss else "")
        lines.append(f"| {impl} | " + " | ".join(cells) + " |")
    versions = []
    for dist in ("pyperf", "pyfuse3", "llfuse", "mfusepy", "fusepy"):
        try:
            v = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            v = "not installed"
        versions.append(f"{dist} {v}")
    present = [f"{i}.json" for i in IMPLS if os.path.exists(os.path.join(RESULTS, f"{i}.json"))]
    table = subprocess.run([PY, "-m", "pyperf", "compare_to", *present, "--table"],
                           cwd=RESULTS, capture_output=True, text=True).stdout
    lines += ["", "`pyperf compare_to " + " ".join(present) + " --table` (in bench/results):",
              "", "```", table.rstrip(), "```"]
    lines += ["", "Versions: " + ", ".join(versions) + ".", "",
              "![ratio to the C reference](benchmarks.png)", "",
              "Where the time goes, the targets and what is left: [performance.md]"
              "(performance.md).", ""]
    with open(os.path.join(ROOT, "docs", "benchmarks.md"), "w") as f:
        f.write("\n".join(lines))
    chart(m, workloads)


def chart(m: dict[str, dict[str, float]], workloads: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ref = m.get("cref", {})
    impls = [i for i in IMPLS if i in m]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / max(len(impls), 1)
    for k, impl in enumerate(impls):
        xs, ys = [], []
        for j, w in enumerate(workloads):
            if w in m[impl] and w in ref:
                xs.append(j + k * width)
                ys.append(m[impl][w] / ref[w])
        ax.bar(xs, ys, width, label=impl)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(workloads))], workloads)
    ax.set_ylabel("time / C reference (lower is better)")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(ROOT, "docs", "benchmarks.png"), dpi=100)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--impl", default=",".join(IMPLS))
    p.add_argument("--workload", default="")
    p.add_argument("--fast", action="store_true", help="pyperf --fast")
    p.add_argument("--rigorous", action="store_true", help="pyperf --rigorous")
    a = p.parse_args()
    os.makedirs(RESULTS, exist_ok=True)
    build_cref()
    impls = [i for i in a.impl.split(",") if i]
    only = set(filter(None, a.workload.split(",")))
    pyperf_args = ["--fast"] if a.fast else ["--rigorous"] if a.rigorous else []
    for impl in impls:
        path = os.path.join(RESULTS, f"{impl}.json")
        if os.path.exists(path):
            os.unlink(path)
    summary_path = os.path.join(RESULTS, "summary.json")
    summary: dict[str, Any] = {}
    if os.path.exists(summary_path):  # keep the other implementations' entries
        with open(summary_path) as f:
            summary = {k: v for k, v in json.load(f).items() if k not in impls}
    for workloads, flags in GROUPS:
        ws = [w for w in workloads if not only or w in only]
        for impl in impls:
            if ws:
                run_group(impl, ws, flags, pyperf_args, summary)
    with open(summary_path, "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
    report(summary, "python -m bench " + " ".join(sys.argv[1:]))
    with open(os.path.join(ROOT, "docs", "benchmarks.md")) as f:
        print(f.read())


if __name__ == "__main__":
    main()
