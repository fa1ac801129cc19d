"""The tree on fusepy (libfuse 2, ctypes)."""
from __future__ import annotations

import errno
import sys

from . import DIR_MODE, FILE_MODE, SIZES, lookup_file, parse


def main(argv: list[str] | None = None, module: str = "fuse") -> None:
    args = parse(argv)
    fuse = __import__(module)

    FILE = {"st_mode": FILE_MODE, "st_nlink": 1, "st_size": 1}
    DIR = {"st_mode": DIR_MODE, "st_nlink": 2}

    class Tree(fuse.Operations):
        def getattr(self, path, fh=None):
            if path == "/":
                return DIR
            d, _, name = path[1:].partition("/")
            if d not in SIZES:
                raise fuse.FuseOSError(errno.ENOENT)
            if not name:
                return DIR
            if lookup_file(d, name) is None:
                raise fuse.FuseOSError(errno.ENOENT)
            return FILE

        def readdir(self, path, fh):
            if path == "/":
                return [".", "..", "small", "big"]
            n = SIZES[path[1:]]
            return [".", ".."] + [f"f{i:05d}" for i in range(n)]

    kw = {}
    if args.nocache:
        kw = {"entry_timeout": 0, "attr_timeout": 0, "negative_timeout": 0}
    fuse.FUSE(Tree(), args.mountpoint, foreground=True, nothreads=args.single, **kw)


if __name__ == "__main__":
    main(sys.argv[1:])
