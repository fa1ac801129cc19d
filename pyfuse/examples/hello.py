"""The smallest useful filesystem: a read-only root holding one file, ``hello``.

    python -m pyfuse.examples.hello /mnt/x      # serves until Ctrl-C or fusermount3 -u /mnt/x
    cat /mnt/x/hello                            # Hello World!
"""
from __future__ import annotations

import errno
import os
import stat
import time
from typing import Iterator, Optional, Sequence

import pyfuse

CONTENT = b"Hello World!\n"


class Hello(pyfuse.Operations):
    """A root directory with one read-only file."""

    def __init__(self) -> None:
        # Attr's times default to 0 (1970-01-01), and its owner to root: say when and whose.
        self.times = dict.fromkeys(("atime_ns", "mtime_ns", "ctime_ns"), time.time_ns())
        self.owner = {"uid": os.getuid(), "gid": os.getgid()}

    def getattr(self, path: str, fh: Optional[int]) -> pyfuse.Attr:
        if path == "/":
            return pyfuse.Attr(mode=stat.S_IFDIR | 0o755, nlink=2, **self.times, **self.owner)
        if path == "/hello":
            return pyfuse.Attr(mode=stat.S_IFREG | 0o444, size=len(CONTENT), **self.times,
                               **self.owner)
        raise pyfuse.FuseError(errno.ENOENT)

    def readdir(self, path: str, offset: int, fh: int, plus: bool) -> Iterator[str]:
        yield from (".", "..", "hello")

    def open(self, path: str, flags: int) -> int:
        if path != "/hello":
            raise pyfuse.FuseError(errno.ENOENT)
        if flags & 3 != 0:  # O_WRONLY or O_RDWR: this filesystem is read-only
            raise pyfuse.FuseError(errno.EROFS)
        return 0

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return CONTENT[offset:offset + size]


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ._cli import parse, serve

    args, kwargs = parse("Mount a read-only filesystem holding one file, 'hello'.", argv)
    kwargs["ro"] = True  # the kernel answers every write, create and chmod with EROFS
    return serve(Hello(), args.mountpoint, **kwargs)


if __name__ == "__main__":
    raise SystemExit(main())
