"""An async filesystem whose every read waits for a simulated remote round trip: the example
for "thousands of slow requests, one thread" (the inode API's ``async def`` handlers).

    python -m pyfuse.examples.latency /mnt/x --delay 0.05 [--files 16] [--size 1048576]
        [--threads]

The root holds ``--files`` read-only files (``file0``, ``file1``, ...) of ``--size`` bytes, each
filled with its own repeating pattern. ``read`` is ``async def``: it awaits
``asyncio.sleep(delay)`` (the round trip to a server) and returns the bytes. While it waits,
pyfuse's loop goes on reading requests and the event loop runs the other reads, so N concurrent
readers take about one delay, not N, with no thread per request. An interrupted read (Ctrl-C
of the reader) is cancelled and answered EINTR. The files are opened with ``direct_io``, so
every read(2) reaches the filesystem, as on a network filesystem that does not cache. It
serves with one thread reading requests (``threads=False``): the reads wait on the event loop,
not on a thread.
"""
from __future__ import annotations

import argparse
import asyncio
import errno
import stat
import time
from typing import Iterator, Optional, Sequence

import pyfuse.lowlevel as ll
from pyfuse import Attr, FileInfo, FuseError


class Latency(ll.Operations):
    """``files`` files of ``size`` bytes whose reads each take ``delay`` seconds."""

    def __init__(self, delay: float = 0.05, files: int = 16, size: int = 1 << 20) -> None:
        self.delay = delay
        self.size = size
        now = time.time_ns()
        self.root = Attr(mode=stat.S_IFDIR | 0o755, ino=ll.ROOT_INO, nlink=2, atime_ns=now,
                         mtime_ns=now, ctime_ns=now)
        self.names = {f"file{i}": ll.ROOT_INO + 1 + i for i in range(files)}
        self.attrs = {ino: Attr(mode=stat.S_IFREG | 0o444, ino=ino, size=size,
                                blocks=(size + 511) // 512, atime_ns=now, mtime_ns=now,
                                ctime_ns=now) for ino in self.names.values()}
        self.reads = 0          # reads answered
        self.cancelled = 0      # reads cancelled by an interrupt

    def _attr(self, ino: int) -> Attr:
        if ino == ll.ROOT_INO:
            return self.root
        try:
            return self.attrs[ino]
        except KeyError:
            raise FuseError(errno.ENOENT) from None

    def lookup(self, parent: int, name: str) -> Attr:
        if parent != ll.ROOT_INO or name not in self.names:
            raise FuseError(errno.ENOENT)
        return self._attr(self.names[name])

    def getattr(self, ino: int, fh: Optional[int]) -> Attr:
        return self._attr(ino)

    def open(self, ino: int, flags: int) -> FileInfo:
        if flags & 3 != 0:  # O_WRONLY, O_RDWR
            raise FuseError(errno.EACCES)
        return FileInfo(direct_io=True)

    async def read(self, ino: int, size: int, offset: int, fh: int) -> bytes:
        try:
            await asyncio.sleep(self.delay)  # the round trip
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        self.reads += 1
        end = min(offset + size, self.size)
        if offset >= end:
            return b""
        unit = bytes([ino % 251]) * 4096
        data = unit * ((end - offset) // 4096 + 1)
        return data[:end - offset]

    def readdir(self, ino: int, offset: int, fh: int, plus: bool) -> Iterator[tuple[str, Attr]]:
        if ino != ll.ROOT_INO:
            raise FuseError(errno.ENOTDIR)
        yield ".", self.root
        yield "..", self.root
        for name, child in self.names.items():
            yield name, self.attrs[child]


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ._cli import parse, serve

    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--delay", type=float, default=0.05, help="seconds each read waits")
    p.add_argument("--files", type=int, default=16)
    p.add_argument("--size", type=int, default=1 << 20)
    p.add_argument("--threads", action="store_true",
                   help="pyfuse's multi-threaded loop (default: one thread reads requests)")
    own, rest = p.parse_known_args(argv)
    args, kwargs = parse("Mount a read-only filesystem whose reads each wait --delay seconds "
                         "(async handlers: --delay, --files, --size, --threads).", rest)
    # Every slow handler is async, so one thread reading requests is enough: more would only
    # wait for the GIL (measured with bench/aio.py A256: about 7,000 requests/s with one
    # reader, 6,000 with the multi-threaded loop, which had started 10 workers).
    kwargs["threads"] = own.threads
    return serve(Latency(own.delay, own.files, own.size), args.mountpoint,
                 session_type=ll.Session, **kwargs)


if __name__ == "__main__":
    raise SystemExit(main())
