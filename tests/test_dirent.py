"""The inode API's listing records (csrc/dirent.c): written from pyfuse's attr instead of through
libfuse's fuse_add_direntry(_plus), they must be the bytes the installed libfuse writes, for
every field's edge (times before 1970, values beyond 32 bits that the kernel's struct cuts,
timeouts libfuse rounds), and reach the kernel as a readdirplus listing's attributes."""
from __future__ import annotations

import errno
import os
import stat
from typing import Any, Optional

import pytest

import pyfuse.lowlevel as ll
from pyfuse import Attr, Config, FuseError
from pyfuse._core.convert import pack_attr
from pyfuse._pyfuse_c import ffi, lib

FILE = stat.S_IFREG | 0o640
U64 = (1 << 64) - 1

ATTRS = [
    Attr(mode=FILE, ino=2),
    Attr(mode=stat.S_IFDIR | 0o755, ino=U64, nlink=(1 << 32) + 3, uid=4_000_000_000,
         gid=(1 << 32) + 7, size=(1 << 63) - 1, blocks=12345, rdev=(1 << 40) + 0x0801,
         blksize=(1 << 32) + 512, atime_ns=-1, mtime_ns=-1_500_000_001,
         ctime_ns=1_700_000_000_123_456_789),
    Attr(mode=stat.S_IFLNK | 0o777, ino=7, size=-1, blocks=-5, atime_ns=-(1 << 63),
         mtime_ns=(1 << 63) - 1, ctime_ns=999_999_999),
    Attr(mode=stat.S_IFCHR | 0o600, ino=1 << 40, rdev=0x0103),
    Attr(mode=0, ino=0),  # no attributes
]
NAMES = ["a", ".", "..", "x" * 7, "y" * 8, "z" * 9, "n" * 255, "é"]
TIMEOUTS = [(0.0, 0.0), (1.0, 3600.0), (0.5, 1e-9), (2.999999999, 0.1234567891), (-1.0, 1e30),
            (1e20, 86400.25)]


@pytest.mark.nofuse
@pytest.mark.parametrize("timeouts", TIMEOUTS)
def test_records_are_libfuses_bytes(timeouts: tuple[float, float]) -> None:
    for attr in ATTRS:
        packed = ffi.from_buffer("struct pyfuse_attr *", bytearray(pack_attr(attr)))
        for name in NAMES:
            for off in (1, 2, (1 << 63) - 1):
                assert lib.pyfuse_dirent_matches_libfuse(packed, name.encode(), off,
                                                         *timeouts) == 1, (attr, name, off)


class Listed(ll.Operations):
    """/ lists four files of four kinds, each with its own inode number and odd attributes;
    getattr and lookup count their calls, so a stat answered without them came from the
    listing's attributes."""

    def __init__(self) -> None:
        self.asked = 0
        self.files = {  # times before 1970, ids and links beyond what 16 bits hold
            "f": Attr(mode=FILE, ino=2, nlink=1, size=5, uid=70000, gid=80000, atime_ns=-1,
                      mtime_ns=-1_500_000_001, ctime_ns=1_700_000_000_123_456_789),
            "d": Attr(mode=stat.S_IFDIR | 0o755, ino=1 << 40, nlink=70000, blocks=8,
                      atime_ns=1_234_567_890_123_456_789, mtime_ns=5),
            "l": Attr(mode=stat.S_IFLNK | 0o777, ino=7, size=3),
            "c": Attr(mode=stat.S_IFCHR | 0o600, ino=9, rdev=os.makedev(1, 3)),
        }

    def getattr(self, ino: int, fh: Optional[int]) -> Attr:
        if ino == 1:
            return Attr(mode=stat.S_IFDIR | 0o755, ino=1, nlink=2)
        self.asked += 1
        return next(a for a in self.files.values() if a.ino == ino)

    def lookup(self, parent: int, name: str) -> Attr:
        self.asked += 1
        if name not in self.files:
            raise FuseError(errno.ENOENT)
        return self.files[name]

    def readdir(self, ino: int, offset: int, fh: int, plus: bool) -> Any:
        for i, (name, a) in enumerate(self.files.items()):
            if i >= offset:
                yield name, a, i + 1


@pytest.mark.timeout(60)
def test_readdirplus_attributes_reach_the_kernel(mount_ops: Any, mnt: str) -> None:
    ops = Listed()
    mount_ops(ops, config=Config(readdirplus="always", entry_timeout=3600, attr_timeout=3600))
    with os.scandir(mnt) as it:
        listed = {e.name: (e.inode(), stat.S_IFMT(e.stat(follow_symlinks=False).st_mode))
                  for e in it}
    assert listed == {n: (a.ino, stat.S_IFMT(a.mode)) for n, a in ops.files.items()}
    for name, a in ops.files.items():
        st = os.lstat(os.path.join(mnt, name))
        assert (st.st_ino, st.st_mode, st.st_size, st.st_nlink, st.st_blocks) == (
            a.ino, a.mode, a.size, a.nlink, a.blocks), name
        assert (st.st_uid, st.st_gid, st.st_rdev) == (a.uid, a.gid, a.rdev), name
        assert (st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns) == (
            a.atime_ns, a.mtime_ns, a.ctime_ns), name
    assert ops.asked == 0  # every stat above was the listing's
