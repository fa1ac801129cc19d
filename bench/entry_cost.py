"""What a listing costs per entry on the Python side: pulled from the filesystem's readdir
generator and packed for C by the readdir engine (``pyfuse._core.batch.pack``), 512 entries
a batch, for /big (65,536 entries) of bench/tree_ll.py as the docs teach (``(name, attr,
offset)`` tuples, an ``Attr`` kept per inode) and of its tuned extra (``(name, template, 0,
ino)`` 4-tuples built by C iterators). No mount: timeit, best of 3.

    python bench/entry_cost.py
"""
from __future__ import annotations

import os
import sys
import timeit
from itertools import islice
from typing import Any, Callable

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import model  # noqa: E402
from bench.tree_ll import Tree, TunedTree  # noqa: E402
from pyfuse._core import batch  # noqa: E402
from pyfuse._core.readdir import READDIR_BATCH  # noqa: E402


class _Dir:
    mode = batch.UNKNOWN  # what struct pyfuse_dir holds of the listing: its offset mode


def per_entry(listing: Callable[[], Any]) -> float:
    """Nanoseconds an entry to pull ``listing()`` in batches and pack each."""
    def run() -> None:
        it = iter(listing())
        while True:
            entries = list(islice(it, READDIR_BATCH))
            if not entries:
                return
            batch.pack(_Dir(), entries)
    run()  # the inode table filled, as after a first listing
    n = model.SIZES["big"]
    return min(timeit.repeat(run, number=2, repeat=3)) / 2 / n * 1e9


def main() -> None:
    big = model.ino_of("/big")
    tree, tuned = Tree(), TunedTree()
    print(f"as the docs teach ((name, attr, offset), an Attr per inode): "
          f"{per_entry(lambda: tree.readdir(big, 0, 0, True)):.0f} ns an entry")
    print(f"tuned ((name, template, 0, ino) by C iterators): "
          f"{per_entry(lambda: tuned.readdir(big, 0, 0, True)):.0f} ns an entry")


if __name__ == "__main__":
    main()
