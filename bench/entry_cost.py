"""What a listing costs per entry on the Python side: pulled from the filesystem's readdir
generator and packed for C by the readdir engine (``pyfuse._core.batch.pack``), 512 entries
a batch, for /big (65,536 entries) of bench/tree_ll.py as the docs teach (``(name, attr,
offset)`` tuples, an ``Attr`` kept per inode) and of its tuned extra (``(name, template, 0,
ino)`` 4-tuples built by C iterators); and of bench/peers/pyfuse3_tree.py on
pyfuse.compat.pyfuse3 (``readdir_reply`` for each entry), beside its generator alone. No
mount: timeit, best of 3.

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


def per_entry(listing: Callable[[], Any], pack: bool = True, batched: bool = False) -> float:
    """Nanoseconds an entry to pull ``listing()`` in batches and pack each (``pack`` False:
    only pull them; ``batched``: ``listing()`` yields the batches)."""
    def run() -> None:
        if batched:
            for entries in listing():
                batch.pack(_Dir(), entries)
            return
        it = iter(listing())
        while True:
            entries = list(islice(it, READDIR_BATCH))
            if not entries:
                return
            if pack:
                batch.pack(_Dir(), entries)
    run()  # the inode table filled, as after a first listing
    n = model.SIZES["big"]
    return min(timeit.repeat(run, number=2, repeat=3)) / 2 / n * 1e9


def pyfuse3_batches(fs: Any, ino: int) -> Any:
    """The batches pyfuse.compat.pyfuse3's adapter hands the readdir engine for directory
    ``ino`` of the pyfuse3 filesystem ``fs``: its ``readdir`` called with a token of
    READDIR_BATCH entries from each batch's last ``next_id`` (its coroutine never waits: run
    to its end without an event loop)."""
    from pyfuse.compat.pyfuse3._types import ReaddirToken

    start = 0
    while True:
        token = ReaddirToken(READDIR_BATCH)
        try:
            fs.readdir(ino, start, token).send(None)
        except StopIteration:
            pass
        if not token.entries:
            return
        yield token.batch()
        start = token.entries[-1][2]


def main() -> None:
    big = model.ino_of("/big")
    tree, tuned = Tree(), TunedTree()
    print(f"as the docs teach ((name, attr, offset), an Attr per inode): "
          f"{per_entry(lambda: tree.readdir(big, 0, 0, True)):.0f} ns an entry")
    print(f"tuned ((name, template, 0, ino) by C iterators): "
          f"{per_entry(lambda: tuned.readdir(big, 0, 0, True)):.0f} ns an entry")
    # pyfuse3-compat: bench/peers/pyfuse3_tree.py's readdir (readdir_reply for each entry),
    # batches as its adapter makes them; the generator alone beside it
    import pyfuse.compat.pyfuse3 as pyfuse3
    sys.modules["pyfuse3"] = pyfuse3  # (the peer imports pyfuse3: this is pyfuse's)
    from bench.peers.pyfuse3_tree import Tree as P3Tree

    p3 = P3Tree(3600.0)
    p3big = p3.tree.lookup(1, b"big").st_ino
    print(f"pyfuse3-compat (readdir_reply per entry, a batch a readdir call): "
          f"{per_entry(lambda: pyfuse3_batches(p3, p3big), batched=True):.0f} ns an entry")
    print(f"  its filesystem's generator alone: "
          f"{per_entry(lambda: p3.tree.entries(p3big, 0), pack=False):.0f} ns an entry")


if __name__ == "__main__":
    main()
