"""The synthetic benchmark tree (bench/model.py) served through pyfuse's inode API
(pyfuse.lowlevel), numbered as the other low-level peers number it (model.ino_of/path_of).

    python bench/tree_ll.py MOUNTPOINT [--single] [--nocache]

readdir hands out each child's attributes (with its inode number) for readdirplus, as the C
reference does; every request is synchronous (plain ``def``: the fast path).
"""
from __future__ import annotations

import argparse
import errno
import os
import sys

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pyfuse  # noqa: E402
import pyfuse.lowlevel as ll  # noqa: E402
from bench import model  # noqa: E402
from pyfuse import Attr, FuseError  # noqa: E402


def _attr(ino: int, mode: int) -> Attr:
    return Attr(mode=mode, ino=ino, nlink=2 if mode == model.DIR else 1,
                size=0 if mode == model.DIR else 1)


TEMPLATE = {model.DIR: _attr(0, model.DIR), model.FILE: _attr(0, model.FILE)}
ROOT_ENTRIES = [(".", _attr(1, model.DIR), 0, 1), ("..", _attr(1, model.DIR), 0, 1),
                *((name, TEMPLATE[model.DIR], 0, k + 2) for k, name in enumerate(model.TOP))]


class Tree(ll.Operations):
    def lookup(self, parent: int, name: str) -> Attr:
        dirpath = model.path_of(parent)
        if dirpath is None:
            raise FuseError(errno.ENOENT)
        path = dirpath.rstrip("/") + "/" + name
        mode = model.kind(path)
        if mode is None:
            raise FuseError(errno.ENOENT)
        return _attr(model.ino_of(path), mode)

    def getattr(self, ino: int, fh: object) -> Attr:
        path = model.path_of(ino)
        mode = None if path is None else model.kind(path)
        if mode is None:
            raise FuseError(errno.ENOENT)
        return _attr(ino, mode)

    def open(self, ino: int, flags: int) -> int:
        return 0

    def read(self, ino: int, size: int, offset: int, fh: int) -> bytes:
        return b"x"[offset:offset + size]

    def readdir(self, ino: int, offset: int, fh: int, plus: bool):  # noqa: ANN201
        path = model.path_of(ino)
        if path == "/":
            return ROOT_ENTRIES
        found = None if path is None else model.listing(path)
        if found is None:
            raise FuseError(errno.ENOTDIR)
        fmt, n, mode = found
        first = model.ino_of(path + "/" + fmt % 0)
        step = model.ino_of(path + "/" + fmt % 1) - first if n > 1 else 1
        attr = TEMPLATE[mode]
        # (name, attr, offset, ino): one shared template, each child its own inode number
        return ((fmt % i, attr, 0, first + i * step) for i in range(n))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mountpoint")
    p.add_argument("--single", action="store_true")
    p.add_argument("--nocache", action="store_true")
    a = p.parse_args()
    cfg = pyfuse.Config(entry_timeout=0, attr_timeout=0, negative_timeout=0) if a.nocache \
        else pyfuse.Config()
    ll.run(Tree(), a.mountpoint, threads=not a.single, config=cfg, fsname="pyfuse-ll-tree")


if __name__ == "__main__":
    main()
