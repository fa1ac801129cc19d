"""The synthetic benchmark tree (bench/model.py) on each peer binding a user would pick instead
of pyfuse.

Every module has ``main(argv)`` taking ``MOUNTPOINT [--single] [--nocache] [--longcache]``
(--longcache: timeouts of an hour, so that a run under callgrind, many times slower, is served
from the cache as a real run is). The per-request logic is the same everywhere: the model's
parse and range check; the path-based peers share one attribute template per kind of node, the
inode-based ones keep one attribute object per inode (as pyfuse's bench/tree_ll.py does).
"""
from __future__ import annotations

import argparse

from bench import model


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("mountpoint")
    p.add_argument("--single", action="store_true")
    p.add_argument("--nocache", action="store_true")
    p.add_argument("--longcache", action="store_true")
    # the warm rows' flag: the peers' APIs have no way to ask for the kernel's listing cache
    p.add_argument("--dircache", action="store_true")
    # libfuse's request trace on stderr (bench/requests.py counts the requests in it)
    p.add_argument("--debug", action="store_true")
    # a labelled extra (bench/callgrind.py's llfuse-stored, pyfuse3-stored): each directory's
    # listing kept once made, and handed out by a C iterator over it (InodeTree.entries)
    p.add_argument("--stored", action="store_true")
    return p.parse_args(argv)


def timeout(args: argparse.Namespace) -> float:
    """The entry and attribute timeout the flags ask for (libfuse's default: 1 s)."""
    return 0.0 if args.nocache else 3600.0 if args.longcache else 1.0


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
    """What the low-level peers (llfuse, pyfuse3) share: inode numbers over the path model, and
    an inode table (``attrs``: each inode's attribute object, made the first time the inode is
    handed out and kept; ``children``: (parent, name) to the child's, filled by lookup), as an
    inode filesystem keeps one in memory."""

    def __init__(self, cls: type, timeout: float, stored: bool = False) -> None:
        self.cls = cls
        self.t = timeout
        self.attrs: dict[int, object] = {}
        self.children: dict[tuple[int, bytes], object] = {}
        #: --stored: each directory's (name, attributes, next offset) list, kept once made
        self.listings: dict[int, list[tuple[bytes, object, int]]] | None = {} if stored else None

    def node(self, ino: int, mode: int) -> object:
        a = self.attrs.get(ino)
        if a is None:
            a = self.attrs[ino] = entry_attr(self.cls, ino, mode, self.t)
        return a

    def attr(self, ino: int) -> object | None:
        a = self.attrs.get(ino)
        if a is not None:
            return a
        path = model.path_of(ino)
        mode = None if path is None else model.kind(path)
        return None if mode is None else self.node(ino, mode)

    def lookup(self, parent: int, name: bytes) -> object | None:
        a = self.children.get((parent, name))
        if a is not None:
            return a
        dirpath = model.path_of(parent)
        if dirpath is None:
            return None
        path = dirpath.rstrip("/") + "/" + name.decode()
        mode = model.kind(path)
        if mode is None:
            return None
        a = self.children[parent, name] = self.node(model.ino_of(path), mode)
        return a

    def entries(self, ino: int, off: int):  # noqa: ANN201
        """(name, attributes, next offset) of directory ``ino`` from offset ``off``; with
        --stored, an iterator (C's, no Python frame an entry) over the directory's kept list,
        made by the generator below the first time."""
        if self.listings is not None:
            kept = self.listings.get(ino)
            if kept is None:
                kept = self.listings[ino] = list(self._entries(ino, 0))
            return map(kept.__getitem__, range(off, len(kept)))  # (islice would step to off)
        return self._entries(ino, off)

    def _entries(self, ino: int, off: int):  # noqa: ANN202
        path = model.path_of(ino) or "/nonexistent"
        if path == "/":
            for k, name in enumerate(model.TOP[off:], off):
                yield name.encode(), self.node(k + 2, model.DIR), k + 1
            return
        found = model.listing(path)
        if found is None:
            return
        fmt, n, mode = found
        first = model.ino_of(path + "/" + fmt % 0)
        step = model.ino_of(path + "/" + fmt % 1) - first if n > 1 else 1
        for i in range(off, n):
            yield (fmt % i).encode(), self.node(first + i * step, mode), i + 1
