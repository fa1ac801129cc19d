"""What the bench runs: each suite's implementations (the daemons' command lines), its groups
of workloads with the daemon flags they share, its targets, and the C references
(:func:`build_cref`). bench/__main__.py runs them and bench/report.py writes their page; the
one-off tools (requests.py, cpu_share.py, callgrind.py) and the pinned suite take their tables
from here.
"""
from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

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
