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
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

from bench import aio, pinned
from bench.report import report
from bench.suites import (
    CPASS,
    DATA_IMPLS,
    DATA_WORKLOADS,
    FLOOR_GROUPS,
    FLOOR_IMPLS,
    GROUPS,
    HERE,
    IMPLS,
    PASSTHROUGH_C,
    PY,
    RESULTS,
    ROOT,
    ROUNDS,
    SLOW,
    build_cref,
)


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
