"""What a listing's spelling costs pyfuse._pull an entry, on a directory kept as a dict.

Prototype for issue 28 (not part of the package): the bench's tuned tree answers with
``zip(map(fmt.__mod__, range(n)), ...)``, whose names are formatted in C, so its per-entry
figure says little about a filesystem that keeps its children in a dict. This pulls one
listing of N names, batch by batch, spelled three ways, and is run under callgrind once per
spelling and once with none (the setup alone); (spelling - none) / N is the cost an entry:

    for m in none gen zip items; do valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        python bench/proto_spelling.py $m; done

- gen: the docs' idiom, ``for name, node in children.items(): yield name, node.attr``;
- zip: ``zip(children.keys(), map(attrgetter("attr"), children.values()))``, no Python frame;
- items: ``iter(attrs.items())`` of a dict of name -> Attr.
"""
import sys
from operator import attrgetter
from typing import Any, Iterator

from pyfuse import Attr, _pull
from pyfuse._core import batch

N = 65536


class Node:
    """A directory's child as a filesystem keeps it: its attributes and its inode."""

    __slots__ = ("attr", "ino")

    def __init__(self, ino: int) -> None:
        self.ino = ino
        self.attr = Attr(ino=ino, mode=0o100644, nlink=1, size=ino)


def main() -> None:
    """Pull the listing spelled as argv[1] says; print the entries pulled."""
    children = {f"file{i:06d}": Node(i + 2) for i in range(N)}
    attrs = {name: node.attr for name, node in children.items()}

    def gen() -> Iterator[Any]:
        for name, node in children.items():
            yield name, node.attr

    spellings = {
        "gen": gen,
        "zip": lambda: zip(children.keys(), map(attrgetter("attr"), children.values())),
        "items": lambda: iter(attrs.items()),
    }
    if not batch.ATTRS_IN_C:
        sys.exit("pyfuse._pull does not pack Attrs here (Python 3.10 or later is needed)")
    n = 0
    if sys.argv[1] != "none":
        it = spellings[sys.argv[1]]()
        while True:
            got = _pull.pull(it, _pull.MAX_BATCH)
            if got[1] == 0:
                break
            assert got[2] & _pull.PACKED, got[2]
            n += got[1]
    print(sys.argv[1], n)


if __name__ == "__main__":
    main()
