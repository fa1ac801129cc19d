"""What a small listing returned as a list costs the daemon (docs/performance.md, part 16).

    python bench/small_lists.py [CHECKOUT]

Serves a root of 7 entries from a ``readdir`` that returns a kept list, once as bare names
(``[".", "..", "a", ...]``) and once as ``(name, attr)`` tuples, each under callgrind
(bench/callgrind.py's ``measure``), and prints the daemon's instructions per ``os.listdir``
of it (1,000 of them, after as many to warm up). CHECKOUT: the tree whose pyfuse is served
(default: this one; a worktree needs its compiled modules in place).
"""
from __future__ import annotations

import os
import stat
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.dirname(HERE))

NAMES = [".", "..", "a", "b", "c", "d", "e"]


def serve(shape: str, mountpoint: str) -> None:
    """The filesystem: ``readdir`` returns the kept list of ``shape`` ("names" or "tuples")."""
    import pyfuse
    from pyfuse import Attr

    d = Attr(mode=stat.S_IFDIR | 0o755, nlink=2)
    f = Attr(mode=stat.S_IFREG | 0o644, size=1)
    listing = NAMES if shape == "names" else [(n, d if n in (".", "..") else f) for n in NAMES]

    class Small(pyfuse.Operations):
        def getattr(self, path: str, fh: object) -> Attr:
            return d if path == "/" else f

        def readdir(self, path: str, offset: int, fh: object, plus: bool) -> list[object]:
            return listing

    pyfuse.run(Small(), mountpoint, threads=False,
               config=pyfuse.Config(entry_timeout=3600, attr_timeout=3600))


def main() -> None:
    from bench.callgrind import measure

    def lists(m: str) -> None:
        for _ in range(1000):
            os.listdir(m)

    checkout = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(HERE)
    for shape in ("names", "tuples"):
        n = measure([sys.executable, os.path.abspath(__file__), "--serve", shape], checkout,
                    lists, lists, 1000, pymalloc=True)
        print(f"{shape}: {n:,.0f} instructions a listing")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2], sys.argv[3])
    else:
        main()
