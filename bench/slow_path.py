"""The async suite's filesystem on the path API: the latency example's files (16 files of
1 MiB), every read waiting --delay seconds in a plain ``def`` handler (time.sleep), so the
loop's threads are what serve reads in parallel (default loop: up to 10 workers).

    python bench/slow_path.py MOUNTPOINT [--delay 0.01] [--max-threads N]
"""
from __future__ import annotations

import argparse
import errno
import stat
import time
from typing import Optional

import pyfuse
from pyfuse import Attr, FileInfo, FuseError

SIZE, FILES = 1 << 20, 16
DIR = Attr(mode=stat.S_IFDIR | 0o755, nlink=2)
FILE = Attr(mode=stat.S_IFREG | 0o444, size=SIZE, blocks=SIZE // 512)
NAMES = {f"/file{i}" for i in range(FILES)}


class Slow(pyfuse.Operations):
    def __init__(self, delay: float) -> None:
        self.delay = delay

    def getattr(self, path: str, fh: Optional[int]) -> Attr:
        if path == "/":
            return DIR
        if path in NAMES:
            return FILE
        raise FuseError(errno.ENOENT)

    def open(self, path: str, flags: int) -> FileInfo:
        return FileInfo(direct_io=True)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        time.sleep(self.delay)  # the round trip, holding a loop thread
        return b"x" * max(0, min(size, SIZE - offset))

    def readdir(self, path: str, offset: int, fh: int, plus: bool) -> list[str]:
        return [".", "..", *(n[1:] for n in sorted(NAMES))]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mountpoint")
    p.add_argument("--delay", type=float, default=0.01)
    p.add_argument("--max-threads", type=int, default=0)
    a = p.parse_args()
    pyfuse.run(Slow(a.delay), a.mountpoint, fsname="pyfuse-slow", max_threads=a.max_threads)


if __name__ == "__main__":
    main()
