"""The synthetic benchmark tree on each peer binding a user would pick instead of pyfuse.

Every module has ``main(argv)`` taking ``MOUNTPOINT [--single] [--nocache]`` and serves the
tree of bench/cref.c: /small (8 files), /big (65,536 files) named fNNNNN, 0644, 1 byte. The
per-entry logic is the same everywhere: parse the name, check the range, hand out one shared
attribute template.
"""
from __future__ import annotations

import argparse
import stat

SIZES = {"small": 8, "big": 65536}
FILE_MODE = stat.S_IFREG | 0o644
DIR_MODE = stat.S_IFDIR | 0o755


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("mountpoint")
    p.add_argument("--single", action="store_true")
    p.add_argument("--nocache", action="store_true")
    return p.parse_args(argv)


def lookup_file(dirname: str, name: str) -> int | None:
    """Index of file ``name`` in ``dirname``, or None."""
    n = SIZES.get(dirname)
    if n is None or not name[:1] == "f" or not name[1:].isdigit():
        return None
    i = int(name[1:])
    return i if i < n else None


def entry_attr(cls: type, ino: int, mode: int, timeout: float) -> object:
    """An llfuse/pyfuse3 EntryAttributes (``cls``) for the tree's directories and files."""
    a = cls()
    a.st_ino = ino
    a.st_mode = mode
    a.st_nlink = 2 if mode == DIR_MODE else 1
    a.st_size = 0 if mode == DIR_MODE else 1
    a.attr_timeout = a.entry_timeout = timeout
    return a


# The low-level peers (llfuse, pyfuse3) number inodes: 1 root, 2 /small, 3 /big, files from BASE.
ROOT_INO = 1
DIRS = {2: "small", 3: "big"}
BASE = {"small": 1_000, "big": 1_000_000}


def inode_mode(ino: int) -> int | None:
    """The mode of inode ``ino``, or None if there is no such inode."""
    if ino == ROOT_INO or ino in DIRS:
        return DIR_MODE
    if any(base <= ino < base + SIZES[d] for d, base in BASE.items()):
        return FILE_MODE
    return None


def child(parent: int, name: str) -> tuple[int, int] | None:
    """(inode, mode) of ``name`` in directory ``parent``, or None."""
    if parent == ROOT_INO:
        return next(((ino, DIR_MODE) for ino, d in DIRS.items() if d == name), None)
    d = DIRS.get(parent)
    i = lookup_file(d, name) if d else None
    return None if i is None else (BASE[d] + i, FILE_MODE)
