"""The tree on fusepy (libfuse 2, ctypes)."""
from __future__ import annotations

import errno
import sys

from bench import model

from . import parse


def main(argv: list[str] | None = None, module: str = "fuse") -> None:
    args = parse(argv)
    fuse = __import__(module)

    attrs = {model.FILE: {"st_mode": model.FILE, "st_nlink": 1, "st_size": 1},
             model.DIR: {"st_mode": model.DIR, "st_nlink": 2}}

    class Tree(fuse.Operations):
        def getattr(self, path, fh=None):
            mode = model.kind(path)
            if mode is None:
                raise fuse.FuseOSError(errno.ENOENT)
            return attrs[mode]

        def readdir(self, path, fh):
            if path == "/":
                return [".", "..", *model.TOP]
            found = model.listing(path)
            if found is None:
                raise fuse.FuseOSError(errno.ENOTDIR)
            fmt, n, _ = found
            return [".", ".."] + [fmt % i for i in range(n)]

        def open(self, path, flags):
            return 0

        def read(self, path, size, offset, fh):
            return b"x"[offset:offset + size]

    kw = {}
    if args.nocache:
        kw = {"entry_timeout": 0, "attr_timeout": 0, "negative_timeout": 0}
    elif args.longcache:
        kw = {"entry_timeout": 3600, "attr_timeout": 3600}
    if args.debug:  # pyfuse.compat logs libfuse's trace on the pyfuse logger
        import logging
        logging.basicConfig(level=logging.DEBUG)
    fuse.FUSE(Tree(), args.mountpoint, foreground=True, nothreads=args.single, debug=args.debug,
              **kw)


if __name__ == "__main__":
    main(sys.argv[1:])
