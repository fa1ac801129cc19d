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
