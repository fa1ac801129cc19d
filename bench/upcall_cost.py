"""What the Python side of an inode-API request costs, in instructions (callgrind), without a
mount and without cffi's upcall: the lookup and getattr callbacks of pyfuse.lowlevel called
as cffi calls them, the filesystem's handlers alone (bench/tree_ll.py as the docs teach), and
the callback's steps one at a time (a bare four-argument function, the session, the out
buffer, the name, the reply copied into the out struct), and the two callbacks on
pyfuse.compat.llfuse's face (bench/peers/llfuse_tree.py through its adapter).

    python bench/upcall_cost.py [--python PYTHON]

Each row runs under ``valgrind --tool=callgrind`` twice (N and 2N calls) and prints the
difference divided by N, so the interpreter's start-up cancels; the loop's own cost (the
"loop" row) is in every other row. Slow: two valgrind runs a row, about ten seconds each.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

N = 10_000

#: row: what it measures
ROWS = {
    "loop": "the loop alone (in every row below)",
    "lookup": "pyfuse_ll_cb_lookup, as cffi calls it (the filesystem's lookup included)",
    "getattr": "pyfuse_ll_cb_getattr, as cffi calls it (the filesystem's getattr included)",
    "fs_lookup": "the filesystem's lookup alone (Tree.lookup, a cached child)",
    "fs_getattr": "the filesystem's getattr alone (Tree.getattr)",
    "call": "a four-argument function that finds its session and returns 0",
    "out": "... and finds the thread's out buffer (the session's list, by slot)",
    "name": "... and takes lookup's name from it (a slice, decoded)",
    "handler": "... and calls the filesystem's lookup",
    "reply": "... and copies the Attr into the out struct (all of lookup's steps)",
    "llfuse_lookup": "pyfuse_ll_cb_lookup on pyfuse.compat.llfuse's face (bench/peers/"
                     "llfuse_tree.py's lookup through the adapter; llfuse's lock is C's)",
    "llfuse_getattr": "pyfuse_ll_cb_getattr on pyfuse.compat.llfuse's face",
}


def _setup() -> dict[str, Callable[[int], None]]:
    """The rows, each a function running its calls n times."""
    import pyfuse._core.dispatch as dispatch

    found: dict[str, Any] = {}
    registered = dispatch.extern

    def record(fn: Any, name: Any = None, void: bool = False) -> Any:
        found[name or fn.__name__] = fn
        return registered(fn, name, void)

    dispatch.extern = record  # the compiled callbacks are not module attributes: keep them
    from pyfuse._pyfuse_c import ffi, lib
    from pyfuse.lowlevel import _callbacks as cb
    dispatch.extern = registered

    from bench.tree_ll import Tree

    class Session:
        pass

    tree, s = Tree(), Session()
    s._op_lookup, s._op_getattr = tree.lookup, tree.getattr  # as BaseSession binds them
    s._bytes_names = False  # as Session.__init__ sets it
    s._outs, s._keep = dispatch.outs(), dispatch.keeps()
    h = dispatch.register(s)
    out_struct = lib.pyfuse_out_here()  # this thread's, as in a request
    name = b"f00003"
    ffi.memmove(out_struct.name, name, len(name))
    small = tree.lookup(1, "small").ino
    ino = tree.lookup(small, "f00003").ino
    lookup, getattr_ = found["pyfuse_ll_cb_lookup"], found["pyfuse_ll_cb_getattr"]
    lookup(h, 0, small, len(name))  # the out buffer made, as after a first request
    sessions, at, size = dispatch.SESSIONS, cb._NAME, cb._ATTR_SIZE

    def call(h: int, slot: int, parent: int, namelen: int) -> int:
        s = sessions[h]  # noqa: F841
        return 0

    def with_out(h: int, slot: int, parent: int, namelen: int) -> int:
        s = sessions[h]
        o = s._outs[slot]  # noqa: F841
        return 0

    def with_name(h: int, slot: int, parent: int, namelen: int) -> int:
        s = sessions[h]
        o = s._outs[slot]
        n = o[at:at + namelen].decode()  # noqa: F841
        return 0

    def with_handler(h: int, slot: int, parent: int, namelen: int) -> int:
        s = sessions[h]
        o = s._outs[slot]
        n = o[at:at + namelen].decode()
        r = s._op_lookup(parent, n)  # noqa: F841
        return 0

    def with_reply(h: int, slot: int, parent: int, namelen: int) -> int:
        s = sessions[h]
        o = s._outs[slot]
        n = o[at:at + namelen].decode()
        r = s._op_lookup(parent, n)
        o[:size] = r
        return 0

    def four(fn: Callable[..., Any]) -> Callable[[int], None]:
        def run(n: int) -> None:
            for _ in range(n):
                fn(h, 0, small, 6)
        return run

    def run_loop(n: int) -> None:
        for _ in range(n):
            pass

    def run_getattr(n: int) -> None:
        for _ in range(n):
            getattr_(h, 0, ino)

    def run_fs_lookup(n: int) -> None:
        f = tree.lookup
        for _ in range(n):
            f(small, "f00003")

    def run_fs_getattr(n: int) -> None:
        f = tree.getattr
        for _ in range(n):
            f(ino, None)

    def llfuse_face() -> tuple[int, int, int]:
        """A session of pyfuse.compat.llfuse's face over bench/peers/llfuse_tree.py (as
        llfuse.init makes it): its handle, /small's inode and f00003's."""
        import pyfuse.compat.llfuse as llfuse
        sys.modules["llfuse"] = llfuse  # what the runner does
        from bench.peers.llfuse_tree import Tree as LlTree
        from pyfuse.compat.llfuse._adapter import adapt

        lltree = LlTree(0.0)
        ad, c = adapt(lltree, llfuse.lock), Session()
        c._op_lookup, c._op_getattr = ad.lookup, ad.getattr
        c._packed = c._bytes_names = True
        c._outs, c._keep = dispatch.outs(), dispatch.keeps()
        parent = lltree.lookup(1, b"small").st_ino
        return dispatch.register(c), parent, lltree.lookup(parent, b"f00003").st_ino

    def run_llfuse_lookup(n: int) -> None:
        hh, parent, _ = llfuse_face()
        for _ in range(n):
            lookup(hh, 0, parent, 6)

    def run_llfuse_getattr(n: int) -> None:
        hh, _, f = llfuse_face()
        for _ in range(n):
            getattr_(hh, 0, f)

    return {"loop": run_loop, "lookup": four(lookup), "getattr": run_getattr,
            "fs_lookup": run_fs_lookup, "fs_getattr": run_fs_getattr, "call": four(call),
            "out": four(with_out), "name": four(with_name), "handler": four(with_handler),
            "reply": four(with_reply), "llfuse_lookup": run_llfuse_lookup,
            "llfuse_getattr": run_llfuse_getattr}


def instructions(argv: list[str], cwd: str | None = None) -> int:
    """What callgrind counts for the whole run of ``argv`` (in ``cwd``)."""
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                       cwd=cwd, capture_output=True, text=True, check=True)
    m = re.search(r"Collected : (\d+)", r.stderr)
    if m is None:
        raise SystemExit(f"callgrind printed no count for {argv}: {r.stderr[-500:]}")
    return int(m.group(1))


def _count(python: str, row: str, n: int) -> int:
    return instructions([python, os.path.abspath(__file__), "--run", row, str(n)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--run", nargs=2, metavar=("ROW", "N"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.run:
        _setup()[a.run[0]](int(a.run[1]))
        return
    for row, what in ROWS.items():
        per = (_count(a.python, row, 2 * N) - _count(a.python, row, N)) / N
        print(f"{row:11s} {per:7,.0f}  {what}", flush=True)


if __name__ == "__main__":
    main()
