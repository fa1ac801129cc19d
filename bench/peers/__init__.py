"""The synthetic benchmark tree (bench/model.py) on each peer binding a user would pick instead
of pyfuse.

Every module has ``main(argv)`` taking ``MOUNTPOINT [--single] [--nocache]``. The per-request
logic is the same everywhere: the model's parse and range check, one shared attribute template
per kind of node.
"""
from __future__ import annotations

import argparse

from bench import model


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("mountpoint")
    p.add_argument("--single", action="store_true")
    p.add_argument("--nocache", action="store_true")
    return p.parse_args(argv)


def entry_attr(cls: type, ino: int, mode: int, timeout: float) -> object:
    """An llfuse/pyfuse3 EntryAttributes (``cls``) for a node of the tree."""
    a = cls()
    a.st_ino = ino
    a.st_mode = mode
    a.st_nlink = 2 if mode == model.DIR else 1
    a.st_size = 0 if mode == model.DIR else 1
    a.attr_timeout = a.entry_timeout = timeout
    return a


class InodeTree:
    """What the low-level peers (llfuse, pyfuse3) share: inode numbers over the path model."""

    def __init__(self, cls: type, timeout: float) -> None:
        self.cls = cls
        self.t = timeout

    def attr(self, ino: int) -> object | None:
        path = model.path_of(ino)
        mode = None if path is None else model.kind(path)
        return None if mode is None else entry_attr(self.cls, ino, mode, self.t)

    def lookup(self, parent: int, name: bytes) -> object | None:
        dirpath = model.path_of(parent)
        if dirpath is None:
            return None
        path = dirpath.rstrip("/") + "/" + name.decode()
        mode = model.kind(path)
        return None if mode is None else entry_attr(self.cls, model.ino_of(path), mode, self.t)

    def entries(self, ino: int, off: int):  # noqa: ANN201
        """(name, attributes, next offset) of directory ``ino`` from offset ``off``."""
        path = model.path_of(ino) or "/nonexistent"
        if path == "/":
            for k, name in enumerate(model.TOP[off:], off):
                yield name.encode(), entry_attr(self.cls, k + 2, model.DIR, self.t), k + 1
            return
        found = model.listing(path)
        if found is None:
            return
        fmt, n, mode = found
        first = model.ino_of(path + "/" + fmt % 0)
        step = model.ino_of(path + "/" + fmt % 1) - first if n > 1 else 1
        for i in range(off, n):
            yield (fmt % i).encode(), entry_attr(self.cls, first + i * step, mode, self.t), i + 1
