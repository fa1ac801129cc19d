"""The synthetic benchmark tree, shared by every Python implementation (bench/cref.c is the same
in C). Nothing is stored: names are parsed and range-checked on every request.

    /small/f00000 ... f00007          8 files                   (W1, W5)
    /big/f00000 ... f65535            65,536 files              (W3)
    /w2/d000000 ... d999999/f00000 ... f00007
                                      1,000,000 directories of 8 files, each listed once (W2)
    /src/d00 ... d63/d00 ... d63/f00 ... f14
                                      61,440 files in 4,161 directories (the tree walk)

Every file is 0644 and 1 byte long ("x"). Path-based implementations use :func:`kind` and
:func:`listing`; the low-level (inode-based) peers number the nodes with :func:`ino_of` and
:func:`path_of`.
"""
from __future__ import annotations

import stat
from typing import Optional

DIR = stat.S_IFDIR | 0o755
FILE = stat.S_IFREG | 0o644
TOP = ("small", "big", "w2", "src")
SIZES = {"small": 8, "big": 65536}
W2_DIRS, W2_FILES = 1_000_000, 8
SRC_DIRS, SRC_FILES = 64, 15

# Inode numbering for the low-level peers: 1 is the root, 2-5 the TOP directories.
_BASE = {"small": 1_000, "big": 1_000_000, "w2": 10_000_000, "src": 100_000_000}


def _index(name: str, prefix: str, width: int, n: int) -> int:
    """i for ``name == f"{prefix}{i:0{width}d}"`` with ``0 <= i < n``, else -1."""
    if len(name) != width + 1 or name[0] != prefix or not name[1:].isascii() \
            or not name[1:].isdigit():
        return -1
    i = int(name[1:])
    return i if i < n else -1


def kind(path: str) -> Optional[int]:
    """DIR, FILE or None (no such entry) for an absolute path in the tree."""
    if path == "/":
        return DIR
    parts = path[1:].split("/")
    top, depth = parts[0], len(parts)
    n = SIZES.get(top)
    if n is not None:
        if depth == 1:
            return DIR
        return FILE if depth == 2 and _index(parts[1], "f", 5, n) >= 0 else None
    if top == "w2":
        if depth == 1:
            return DIR
        if depth > 3 or _index(parts[1], "d", 6, W2_DIRS) < 0:
            return None
        if depth == 2:
            return DIR
        return FILE if _index(parts[2], "f", 5, W2_FILES) >= 0 else None
    if top == "src":
        if depth > 4 or any(_index(p, "d", 2, SRC_DIRS) < 0 for p in parts[1:min(depth, 3)]):
            return None
        if depth < 4:
            return DIR
        return FILE if _index(parts[3], "f", 2, SRC_FILES) >= 0 else None
    return None


def listing(path: str) -> Optional[tuple[str, int, int]]:
    """``(fmt, n, mode)`` of a directory other than the root: its entries are ``fmt % i`` for i
    in range(n), all of mode ``mode``. None if ``path`` is not such a directory."""
    if path == "/" or kind(path) != DIR:
        return None
    parts = path[1:].split("/")
    top, depth = parts[0], len(parts)
    if top in SIZES:
        return "f%05d", SIZES[top], FILE
    if top == "w2":
        return ("d%06d", W2_DIRS, DIR) if depth == 1 else ("f%05d", W2_FILES, FILE)
    return ("d%02d", SRC_DIRS, DIR) if depth < 3 else ("f%02d", SRC_FILES, FILE)


def ino_of(path: str) -> int:
    """The inode number of an existing path (check it with :func:`kind` first)."""
    if path == "/":
        return 1
    parts = path[1:].split("/")
    top = parts[0]
    ino = TOP.index(top) + 2
    if len(parts) == 1:
        return ino
    idx = [int(p[1:]) for p in parts[1:]]
    base = _BASE[top]
    if top in SIZES:
        return base + idx[0]
    if top == "w2":  # directory i: base + 16 i; its file j: + 1 + j
        return base + 16 * idx[0] + (1 + idx[1] if len(idx) == 2 else 0)
    ino = base + 65536 * idx[0]  # src: d a: base + 65536 a; d a/d b: + 16 (b + 1); file k: + 1 + k
    if len(idx) > 1:
        ino += 16 * (idx[1] + 1)
    if len(idx) > 2:
        ino += 1 + idx[2]
    return ino


def path_of(ino: int) -> Optional[str]:
    """The path of inode ``ino``, or None if there is no such inode."""
    if ino == 1:
        return "/"
    if 2 <= ino < 2 + len(TOP):
        return "/" + TOP[ino - 2]
    if ino >= _BASE["src"]:
        a, rest = divmod(ino - _BASE["src"], 65536)
        b, k = divmod(rest, 16)
        path = f"/src/d{a:02d}" + (f"/d{b - 1:02d}" if b else "") + \
            (f"/f{k - 1:02d}" if k else "")
        ok = b > 0 or k == 0
    elif ino >= _BASE["w2"]:
        i, j = divmod(ino - _BASE["w2"], 16)
        path, ok = f"/w2/d{i:06d}" + (f"/f{j - 1:05d}" if j else ""), True
    elif ino >= _BASE["big"]:
        path, ok = f"/big/f{ino - _BASE['big']:05d}", True
    elif ino >= _BASE["small"]:
        path, ok = f"/small/f{ino - _BASE['small']:05d}", True
    else:
        return None
    return path if ok and kind(path) is not None else None
