"""The synthetic benchmark tree (bench/model.py) served through pyfuse's inode API
(pyfuse.lowlevel), numbered as the other low-level peers number it (model.ino_of/path_of).

    python bench/tree_ll.py MOUNTPOINT [--single] [--nocache] [--longcache] [--tuned]
        [--prepared] [--stored [SPELLING]] [--stats]

The default filesystem (:class:`Tree`) is written as docs/lowlevel.md teaches: an inode table
holding one ``Attr`` per inode (made the first time the inode is handed out, and kept, as the
llfuse and pyfuse3 peers keep their ``EntryAttributes``), ``getattr`` and ``lookup`` returning
those objects, ``readdir`` a generator of ``(name, attr, offset)`` with ``str`` names.

--tuned: :class:`TunedTree`, the labelled extra: listings built by C iterators from one
attribute template per kind, as ``(name, attr, offset, ino)`` tuples. --prepared (with
--tuned): /big's listing is built once, so that W3 shows the binding's own per-entry cost.
--stored: :class:`StoredTree`, a labelled extra matched with the peers' --stored (each
directory's children kept once listed; SPELLING, how readdir hands them out: kept, items, copy
or fresh). --longcache: timeouts of an hour (bench/callgrind.py). --stats: serve with
statistics and print their table on stderr at exit. Every request is synchronous (plain
``def``). There is no ``opendir``: with --dircache (``Config(no_open=True)``) the kernel sends
no OPENDIR and keeps the listings it read (docs/caching.md), the warm rows; without it every
listing is read.
"""
from __future__ import annotations

import argparse
import dataclasses
import errno
import logging
import os
import sys
from itertools import repeat
from typing import Optional

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


def children(path: Optional[str]) -> tuple[str, int, int, int, int]:
    """(name format, count, mode, first inode, inode step) of directory ``path``'s children
    (ENOTDIR if it is none)."""
    found = None if path is None else model.listing(path)
    if path is None or found is None:
        raise FuseError(errno.ENOTDIR)
    fmt, n, mode = found
    first = model.ino_of(path + "/" + fmt % 0)
    step = model.ino_of(path + "/" + fmt % 1) - first if n > 1 else 1
    return fmt, n, mode, first, step


class Tree(ll.Operations):
    """The tree as the docs teach: an inode table of ``Attr`` objects (``attrs``, and
    ``children``: (parent, name) to the child's, filled by lookup)."""

    def __init__(self) -> None:
        self.attrs: dict[int, Attr] = {1: _attr(1, model.DIR)}
        self.children: dict[tuple[int, str], Attr] = {}

    def _node(self, ino: int, mode: int) -> Attr:
        attr = self.attrs.get(ino)
        if attr is None:
            attr = self.attrs[ino] = _attr(ino, mode)
        return attr

    def lookup(self, parent: int, name: str) -> Attr:
        attr = self.children.get((parent, name))
        if attr is not None:
            return attr
        dirpath = model.path_of(parent)
        if dirpath is None:
            raise FuseError(errno.ENOENT)
        path = dirpath.rstrip("/") + "/" + name
        mode = model.kind(path)
        if mode is None:
            raise FuseError(errno.ENOENT)
        attr = self.children[parent, name] = self._node(model.ino_of(path), mode)
        return attr

    def getattr(self, ino: int, fh: object) -> Attr:
        attr = self.attrs.get(ino)
        if attr is not None:
            return attr
        path = model.path_of(ino)
        mode = None if path is None else model.kind(path)
        if mode is None:
            raise FuseError(errno.ENOENT)
        return self._node(ino, mode)

    def open(self, ino: int, flags: int) -> int:
        return 0

    def read(self, ino: int, size: int, offset: int, fh: int) -> bytes:
        return b"x"[offset:offset + size]

    def readdir(self, ino: int, offset: int, fh: int, plus: bool):  # noqa: ANN201
        path = model.path_of(ino)
        if path == "/":
            for k in range(offset, len(model.TOP)):  # (as the llfuse and pyfuse3 peers list it)
                yield model.TOP[k], self._node(k + 2, model.DIR), k + 1
            return
        fmt, n, mode, first, step = children(path)
        for i in range(offset, n):
            yield fmt % i, self._node(first + i * step, mode), i + 1


class StoredTree(Tree):
    """A labelled extra (--stored), matched with the peers' --stored: each directory's
    children kept once listed (made by the docs' generator the first time), and handed out
    as ``spelling`` says: ``kept``, the kept list of ``(name, attr)`` tuples itself (the
    peers' match); ``items``, ``iter(children.items())`` of a dict of name to ``Attr``;
    ``copy``, ``iter(children.copy().items())``; ``fresh``, ``list(children.items())``."""

    def __init__(self, spelling: str = "kept") -> None:
        super().__init__()
        self.spelling = spelling
        self.listings: dict[int, list[tuple[str, Attr]]] = {}
        self.dicts: dict[int, dict[str, Attr]] = {}

    def readdir(self, ino: int, offset: int, fh: int, plus: bool):  # noqa: ANN201
        kept = self.listings.get(ino)
        if kept is None:
            kept = self.listings[ino] = [(name, attr) for name, attr, _ in
                                         super().readdir(ino, 0, fh, plus)]
        if self.spelling == "kept":
            return kept
        children = self.dicts.get(ino)
        if children is None:
            children = self.dicts[ino] = dict(kept)
        if self.spelling == "items":
            return iter(children.items())
        if self.spelling == "copy":
            return iter(children.copy().items())
        return list(children.items())


class TunedTree(Tree):
    """The labelled extra (--tuned): the same inode table, with listings of ``(name, template,
    0, ino)`` tuples built by C iterators from one attribute template per kind (no Python frame
    an entry); ``prepared``: /big's listing built once."""

    def __init__(self, prepared: bool = False) -> None:
        super().__init__()
        fmt, n, mode = model.listing("/big")  # type: ignore[misc]
        self.prepared = [(fmt % i, TEMPLATE[mode], 0, model.ino_of("/big/" + fmt % i))
                         for i in range(n)] if prepared else None

    def readdir(self, ino: int, offset: int, fh: int, plus: bool):  # noqa: ANN201
        path = model.path_of(ino)
        if path == "/":
            return ROOT_ENTRIES
        if self.prepared is not None and path == "/big":
            return self.prepared
        fmt, n, mode, first, step = children(path)
        # (name, attr, offset, ino): one shared template, each child its own inode number,
        # built by C iterators (no Python frame an entry)
        return zip(map(fmt.__mod__, range(n)), repeat(TEMPLATE[mode]), repeat(0),
                   range(first, first + n * step, step))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mountpoint")
    p.add_argument("--single", action="store_true")
    p.add_argument("--nocache", action="store_true")
    p.add_argument("--longcache", action="store_true")
    p.add_argument("--tuned", action="store_true", help="TunedTree, the labelled extra")
    p.add_argument("--prepared", action="store_true", help="with --tuned: /big prepared")
    p.add_argument("--stored", nargs="?", const="kept", choices=("kept", "items", "copy", "fresh"),
                   help="StoredTree: each directory's children kept once listed, handed out "
                   "as this says (a labelled extra)")
    p.add_argument("--stats", action="store_true", help="serve with stats=True (its overhead)")
    p.add_argument("--debug", action="store_true", help="libfuse's request trace, on stderr")
    p.add_argument("--dircache", action="store_true",
                   help="no OPENDIR: the kernel keeps the listings (else every one is read)")
    a = p.parse_args()
    cfg = pyfuse.Config(entry_timeout=0, attr_timeout=0, negative_timeout=0) if a.nocache \
        else pyfuse.Config(entry_timeout=3600, attr_timeout=3600) if a.longcache \
        else pyfuse.Config()
    if a.dircache:  # no opendir: then no OPENDIR at all, and listings kept by the kernel
        cfg = dataclasses.replace(cfg, no_open=True)
    ops = TunedTree(a.prepared) if a.tuned or a.prepared else StoredTree(a.stored) if a.stored \
        else Tree()
    if a.debug:
        logging.basicConfig(level=logging.DEBUG)
    s = ll.Session(ops, a.mountpoint, threads=not a.single, config=cfg,
                   fsname="pyfuse-ll-tree", stats=a.stats, debug=a.debug)
    s.mount()
    try:
        s.loop()
    finally:
        if a.stats:  # the table on stderr at exit
            print(s.stats_table(), file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
