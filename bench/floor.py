"""The floor of the design: bench/tree.py with pyfuse's getattr and readdir callbacks replaced
by less, to show how much of a workload's time is the crossing into Python, how much the
filesystem's own code, and how much pyfuse's conversions.

    python bench/floor.py MOUNTPOINT (--cffi | --fs) [--single] [--nocache]
    python bench/floor.py MOUNTPOINT --ll [--single] [--nocache]

--cffi  each callback copies a constant answer into C and returns: the attributes of a file
        or of a directory (chosen by a ``b"/f"`` test on the raw path), or the eight entries
        f00000 ... f00007 with a file's attributes. No session look-up, no path decoding, no
        filesystem call: what an ``extern "Python"`` callback costs by itself.
--fs    the same constant answers (or the filesystem's errno), after the filesystem's own
        getattr or readdir has run on the decoded path (a getattr's result picks the constant;
        a readdir's entries are pulled and dropped): what pyfuse would measure if its
        conversions (packing, batching, stream state) cost nothing.

--ll     the inode API's floor (bench/tree_ll.py, for W5 and W1 only, by bench/callgrind.py):
        lookup and getattr replaced by callbacks that reply a constant prepacked entry or
        attributes, chosen by the name or inode number (no session look-up, no filesystem
        call, no conversion): what an ``extern "Python"`` request of the inode API costs.

The constant listing is right for the directories that W1 and W2 list (/small and
/w2/dNNNNNN); any other listing is served by pyfuse's own callback. Only for W1, W5 and W2
(``python -m bench --suite floor``); see docs/performance.md.
"""
from __future__ import annotations

import argparse
import errno
import os
import sys
from types import SimpleNamespace

# The checkout, for the bench package; last, so that an installed pyfuse (an sdist's test run)
# is the one imported.
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pyfuse  # noqa: E402
from bench import model  # noqa: E402
from bench.tree import ATTRS, Tree  # noqa: E402
from pyfuse import _callbacks  # noqa: E402
from pyfuse._core.convert import ATTR_STRUCT, pack_attr  # noqa: E402
from pyfuse._core.convert import path as _path  # noqa: E402
from pyfuse._core.dispatch import OUT_NAME, OUT_NAME_SIZE, SESSIONS, here, onerror, outs  # noqa: E402
from pyfuse._pyfuse_c import ffi, lib  # noqa: E402

PACKED = {mode: pack_attr(a) for mode, a in ATTRS.items()}
FILE, DIR = PACKED[model.FILE], PACKED[model.DIR]
NAMES = "\0".join(f"f{i:05d}" for i in range(8)).encode()
SIZE = ATTR_STRUCT.size
_string = ffi.string
_real_readdir = _callbacks.pyfuse_cb_readdir


def _constant_listing(path: bytes) -> bool:
    return path == b"/small" or path.startswith(b"/w2/d")


def _fill_constant(d, fill) -> int:
    if lib.pyfuse_fill(fill, NAMES, len(NAMES), 8, ffi.NULL, FILE, 0, ffi.NULL, 0) != 8:
        return -errno.EIO  # the kernel buffer took fewer: cannot happen for 8 short names
    d.eof_off = 8  # C answers the next request (at offset 8) with the end of the listing
    return 0


#: what pyfuse's sessions keep the threads' out structs in (dispatch.outs), without the session
_HOLDER = SimpleNamespace(_outs=outs())
_OUTS = _HOLDER._outs


def _out(slot: int):  # noqa: ANN202
    """The calling thread's out struct, as pyfuse's callbacks find it (dispatch.here)."""
    b = _OUTS[slot]
    if b is None:
        b = here(_HOLDER, slot)
    return b


def _raw_path(b, pathlen: int) -> bytes:  # noqa: ANN001
    """getattr's path as the kernel's bytes, as pyfuse's getattr reads it."""
    return b[OUT_NAME:OUT_NAME + pathlen] if 0 <= pathlen < OUT_NAME_SIZE else _string(
        lib.pyfuse_out_path())


def install_cffi() -> None:
    @ffi.def_extern(name="pyfuse_cb_getattr", onerror=onerror)
    def getattr_cffi(h, slot, pathlen, fh=None):
        b = _out(slot)
        b[:SIZE] = FILE if b"/f" in b[OUT_NAME:OUT_NAME + pathlen] else DIR
        return 0

    @ffi.def_extern(name="pyfuse_cb_readdir", onerror=onerror)
    def readdir_cffi(h, path, off, d, fill, plus):
        if off == 0 and _constant_listing(_string(path)):
            return _fill_constant(d, fill)
        return _real_readdir(h, path, off, d, fill, plus)


def install_fs() -> None:
    @ffi.def_extern(name="pyfuse_cb_getattr", onerror=onerror)
    def getattr_fs(h, slot, pathlen, fh=None):
        b = _out(slot)
        try:
            a = SESSIONS[h]._op_getattr(_raw_path(b, pathlen).decode(), fh)
        except OSError as e:  # the tree's ENOENT
            return -e.errno
        b[:SIZE] = PACKED[a.mode]
        return 0

    @ffi.def_extern(name="pyfuse_cb_readdir", onerror=onerror)
    def readdir_fs(h, path, off, d, fill, plus):
        if off == 0 and _constant_listing(_string(path)):
            list(SESSIONS[h]._op_readdir(_path(path), 0, d.fh, bool(plus)))
            return _fill_constant(d, fill)
        return _real_readdir(h, path, off, d, fill, plus)


def install_ll() -> None:
    from pyfuse import Attr

    def packed(ino: int, mode: int) -> bytes:
        return pack_attr(Attr(mode=mode, ino=ino, nlink=2 if mode == model.DIR else 1,
                              size=0 if mode == model.DIR else 1))

    by_name = {b"small": packed(2, model.DIR), **{f"f{i:05d}".encode(): packed(1000 + i,
                                                                                model.FILE)
                                                    for i in range(8)}}
    by_ino = {1: packed(1, model.DIR), 2: packed(2, model.DIR),
              **{1000 + i: packed(1000 + i, model.FILE) for i in range(8)}}
    entry, attr = lib.PYFUSE_REPLY_ENTRY, lib.PYFUSE_REPLY_ATTR
    size, at, buf = ATTR_STRUCT.size, OUT_NAME, _out

    # the cheap crossing, as pyfuse's own callbacks: the answer copied into the thread's out
    # struct, C replies it once the callback has returned (the session's timeouts)
    @ffi.def_extern(name="pyfuse_ll_cb_lookup", onerror=onerror)
    def lookup_floor(h, slot, parent, namelen):
        b = buf(slot)
        a = by_name.get(b[at:at + namelen])  # the name, as pyfuse's lookup gets it
        if a is None:
            return -errno.ENOENT
        b[:size] = a
        return entry

    @ffi.def_extern(name="pyfuse_ll_cb_getattr", onerror=onerror)
    def getattr_floor(h, slot, ino, fh=None):
        buf(slot)[:size] = by_ino[ino]
        return attr


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mountpoint")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--cffi", action="store_true")
    which.add_argument("--fs", action="store_true")
    which.add_argument("--ll", action="store_true")
    p.add_argument("--single", action="store_true")
    p.add_argument("--nocache", action="store_true")
    a = p.parse_args()
    cfg = pyfuse.Config(entry_timeout=0, attr_timeout=0, negative_timeout=0) if a.nocache \
        else pyfuse.Config()
    if a.ll:
        import pyfuse.lowlevel as ll
        from bench.tree_ll import Tree as LLTree
        install_ll()  # after pyfuse.lowlevel registered its own (at import)
        ll.run(LLTree(), a.mountpoint, threads=not a.single, config=cfg, fsname="pyfuse-floor")
        return
    (install_cffi if a.cffi else install_fs)()
    pyfuse.run(Tree(), a.mountpoint, threads=not a.single, config=cfg, fsname="pyfuse-floor")


if __name__ == "__main__":
    main()
