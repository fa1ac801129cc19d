"""The floor of the design: bench/tree.py with pyfuse's getattr and readdir callbacks replaced
by less, to show how much of a workload's time is the crossing into Python, how much the
filesystem's own code, and how much pyfuse's conversions.

    python bench/floor.py MOUNTPOINT (--cffi | --fs) [--single] [--nocache]

--cffi  each callback copies a constant answer into C and returns: the attributes of a file
        or of a directory (chosen by a ``b"/f"`` test on the raw path), or the eight entries
        f00000 ... f00007 with a file's attributes. No session look-up, no path decoding, no
        filesystem call: what an ``extern "Python"`` callback costs by itself.
--fs    the same constant answers (or the filesystem's errno), after the filesystem's own
        getattr or readdir has run on the decoded path (a getattr's result picks the constant;
        a readdir's entries are pulled and dropped): what pyfuse would measure if its
        conversions (packing, batching, stream state) cost nothing.

The constant listing is right for the directories that W1 and W2 list (/small and
/w2/dNNNNNN); any other listing is served by pyfuse's own callback. Only for W1, W5 and W2
(``python -m bench --suite floor``); see docs/performance.md.
"""
from __future__ import annotations

import argparse
import errno
import os
import sys

# The checkout, for the bench package; last, so that an installed pyfuse (an sdist's test run)
# is the one imported.
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pyfuse  # noqa: E402
from bench import model  # noqa: E402
from bench.tree import ATTRS, Tree  # noqa: E402
from pyfuse import _callbacks  # noqa: E402
from pyfuse._core.convert import ATTR_STRUCT, pack_attr  # noqa: E402
from pyfuse._core.convert import path as _path  # noqa: E402
from pyfuse._core.dispatch import onerror  # noqa: E402
from pyfuse._pyfuse_c import ffi, lib  # noqa: E402

PACKED = {mode: pack_attr(a) for mode, a in ATTRS.items()}
FILE, DIR = PACKED[model.FILE], PACKED[model.DIR]
NAMES = "\0".join(f"f{i:05d}" for i in range(8)).encode()
SIZE = ATTR_STRUCT.size
_string, _memmove, _from_handle = ffi.string, ffi.memmove, ffi.from_handle
_real_readdir = _callbacks.pyfuse_cb_readdir


def _constant_listing(path: bytes) -> bool:
    return path == b"/small" or path.startswith(b"/w2/d")


def _fill_constant(d, fill) -> int:
    if lib.pyfuse_fill(fill, NAMES, len(NAMES), 8, ffi.NULL, FILE, 0, ffi.NULL, 0) != 8:
        return -errno.EIO  # the kernel buffer took fewer: cannot happen for 8 short names
    d.eof_off = 8  # C answers the next request (at offset 8) with the end of the listing
    return 0


def install_cffi() -> None:
    @ffi.def_extern(name="pyfuse_cb_getattr", onerror=onerror)
    def getattr_cffi(h, path, out, fh, has_fh):
        _memmove(out, FILE if b"/f" in _string(path) else DIR, SIZE)
        return 0

    @ffi.def_extern(name="pyfuse_cb_readdir", onerror=onerror)
    def readdir_cffi(h, path, off, d, fill, plus):
        if off == 0 and _constant_listing(_string(path)):
            return _fill_constant(d, fill)
        return _real_readdir(h, path, off, d, fill, plus)


def install_fs() -> None:
    @ffi.def_extern(name="pyfuse_cb_getattr", onerror=onerror)
    def getattr_fs(h, path, out, fh, has_fh):
        try:
            a = _from_handle(h)._op_getattr(_path(path), fh if has_fh else None)
        except OSError as e:  # the tree's ENOENT
            return -e.errno
        _memmove(out, PACKED[a.mode], SIZE)
        return 0

    @ffi.def_extern(name="pyfuse_cb_readdir", onerror=onerror)
    def readdir_fs(h, path, off, d, fill, plus):
        if off == 0 and _constant_listing(_string(path)):
            list(_from_handle(h)._op_readdir(_path(path), 0, d.fh, bool(plus)))
            return _fill_constant(d, fill)
        return _real_readdir(h, path, off, d, fill, plus)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mountpoint")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--cffi", action="store_true")
    which.add_argument("--fs", action="store_true")
    p.add_argument("--single", action="store_true")
    p.add_argument("--nocache", action="store_true")
    a = p.parse_args()
    (install_cffi if a.cffi else install_fs)()
    cfg = pyfuse.Config(entry_timeout=0, attr_timeout=0, negative_timeout=0) if a.nocache \
        else pyfuse.Config()
    pyfuse.run(Tree(), a.mountpoint, threads=not a.single, config=cfg, fsname="pyfuse-floor")


if __name__ == "__main__":
    main()
