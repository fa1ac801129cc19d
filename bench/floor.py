"""The floor of the design: bench/tree.py with pyfuse's getattr and readdir callbacks replaced
by less, to show how much of a workload's time is the crossing into Python, how much the
filesystem's own code, and how much pyfuse's conversions.

    python bench/floor.py MOUNTPOINT (--cffi | --str | --fs) [--single] [--nocache]
    python bench/floor.py MOUNTPOINT --ll [--single] [--nocache]
    python bench/floor.py MOUNTPOINT (--llfuse | --llfuse-at) [--single] [--nocache]

--cffi  each callback answers a constant without calling the filesystem: getattr the address
        of a prebuilt Attr (a file's or a directory's, chosen by one byte of the raw path; C
        reads it there, as it reads any Attr pyfuse's getattr answers), readdir the eight
        entries f00000 ... f00007 with a file's attributes. No session look-up, no path
        decoding, no filesystem call: what an ``extern "Python"`` callback costs by itself.
--str   as --cffi, but getattr hands the path, decoded to a ``str``, to a plain function that
        picks the constant by its length and one character: the cheapest path API a handler
        that takes its path as a ``str`` can have (no session look-up, no checks, no hold).
--fs    the filesystem's own getattr or readdir runs on the decoded path first: getattr
        answers the Attr it returned as pyfuse does (by address), readdir pulls and drops the
        entries and answers the same constant listing: what pyfuse would measure if its own
        checks and conversions (packing, batching, stream state) cost nothing.

--ll     the inode API's floor (bench/tree_ll.py, for W5 and W1 only, by bench/callgrind.py):
        lookup and getattr replaced by callbacks that answer the address of a prebuilt Attr,
        chosen by the name or inode number (no session look-up, no filesystem call, no
        conversion): what an ``extern "Python"`` request of the inode API costs.

--llfuse the cheapest way to serve an llfuse program unchanged (bench/peers/llfuse_tree.py, its
        own handlers, W5 and W1 only): lookup and getattr callbacks that call the program's
        method with the name's bytes and one prebuilt RequestContext (never refreshed) and pack
        the EntryAttributes it returns into the thread's out struct with one ``pack_into``,
        inside llfuse's lock (taken by C, as pyfuse.compat does). No session look-up, no
        adapter frame, no check: what an llfuse face costs if its only work is llfuse's.
--llfuse-at as --llfuse, but an EntryAttributes costs nothing to convert: C reads a copy of
        its values made the first time it is seen (kept by its ``id``; the tree keeps each), at
        its address, as if the object were its own C struct (as llfuse's is). The session's
        timeouts are 0 here, the tree's own (--nocache).

The constant listing is right for the directories that W1 and W2 list (/small and
/w2/dNNNNNN); any other listing is served by pyfuse's own callback. Only for W1, W5 and W2
(``python -m bench --suite floor``); see docs/performance.md.
"""
from __future__ import annotations

import argparse
import errno
import os
import sys
from ctypes import addressof as _addressof
from types import SimpleNamespace

# The checkout, for the bench package; last, so that an installed pyfuse (an sdist's test run)
# is the one imported.
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pyfuse  # noqa: E402
from bench import model  # noqa: E402
from bench.tree import ATTRS, Tree  # noqa: E402
from pyfuse import _callbacks  # noqa: E402
from pyfuse._core.convert import pack_attr  # noqa: E402
from pyfuse._core.convert import path as _path  # noqa: E402
from pyfuse._core.dispatch import OUT_NAME, OUT_NAME_SIZE, SESSIONS, here, onerror, outs  # noqa: E402
from pyfuse._pyfuse_c import ffi, lib  # noqa: E402

#: the constant listing: eight names, each with a file's attributes (packed)
NAMES = "\0".join(f"f{i:05d}" for i in range(8)).encode()
FILE = pack_attr(ATTRS[model.FILE])
#: getattr's constant answers: where C reads a file's and a directory's attributes (the
#: address of an Attr, as pyfuse answers one; the tree's module keeps them alive)
FILE_AT, DIR_AT = _addressof(ATTRS[model.FILE]), _addressof(ATTRS[model.DIR])
#: the Attrs the inode API's floors answer, alive while C reads them at their addresses
_KEPT: list[object] = []
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
        b = _OUTS[slot] or _out(slot)  # written out, as pyfuse's getattr is
        # a file of W1, W5 and W2 is the only path whose last six bytes start with "f" (not a
        # `b"/f" in` test: bytes.__contains__ tries its argument as an integer first, and the
        # TypeError it raises and clears cost 1,800 instructions a call on Python 3.11)
        return FILE_AT if pathlen > 7 and b[OUT_NAME + pathlen - 6] == b"f" else DIR_AT

    @ffi.def_extern(name="pyfuse_cb_readdir", onerror=onerror)
    def readdir_cffi(h, path, off, d, fill, plus):
        if off == 0 and _constant_listing(_string(path)):
            return _fill_constant(d, fill)
        return _real_readdir(h, path, off, d, fill, plus)


def install_str() -> None:
    file, folder = ATTRS[model.FILE], ATTRS[model.DIR]

    def handler(path: str, fh: object) -> object:  # a filesystem's getattr, as plain as it gets
        return file if len(path) > 7 and path[-6] == "f" else folder

    @ffi.def_extern(name="pyfuse_cb_getattr", onerror=onerror)
    def getattr_str(h, slot, pathlen, fh=None):
        b = _OUTS[slot] or _out(slot)
        return _addressof(handler(b[OUT_NAME:OUT_NAME + pathlen].decode(), fh))

    @ffi.def_extern(name="pyfuse_cb_readdir", onerror=onerror)
    def readdir_str(h, path, off, d, fill, plus):
        if off == 0 and _constant_listing(_string(path)):
            return _fill_constant(d, fill)
        return _real_readdir(h, path, off, d, fill, plus)


def install_fs() -> None:
    @ffi.def_extern(name="pyfuse_cb_getattr", onerror=onerror)
    def getattr_fs(h, slot, pathlen, fh=None):
        b = _OUTS[slot] or _out(slot)  # written out, as pyfuse's getattr is
        path = b[OUT_NAME:OUT_NAME + pathlen] if 0 <= pathlen < OUT_NAME_SIZE else _raw_path(
            b, pathlen)
        try:
            a = SESSIONS[h]._op_getattr(path.decode(), fh)
        except OSError as e:  # the tree's ENOENT
            return -e.errno
        # read by C at its address, as pyfuse answers an Attr: the tree's are its module's
        # constants (bench/tree.py ATTRS), alive without pyfuse's hold on the slot
        return _addressof(a)

    @ffi.def_extern(name="pyfuse_cb_readdir", onerror=onerror)
    def readdir_fs(h, path, off, d, fill, plus):
        if off == 0 and _constant_listing(_string(path)):
            list(SESSIONS[h]._op_readdir(_path(path), 0, d.fh, bool(plus)))
            return _fill_constant(d, fill)
        return _real_readdir(h, path, off, d, fill, plus)


def install_ll() -> None:
    from pyfuse import Attr

    def attr(ino: int, mode: int) -> Attr:
        return Attr(mode=mode, ino=ino, nlink=2 if mode == model.DIR else 1,
                    size=0 if mode == model.DIR else 1)

    # prebuilt Attrs, kept alive here; their addresses by the name or the inode number
    kept = {b"small": attr(2, model.DIR), **{f"f{i:05d}".encode(): attr(1000 + i, model.FILE)
                                             for i in range(8)}}
    kept_ino = {1: attr(1, model.DIR), 2: kept[b"small"],
                **{1000 + i: kept[f"f{i:05d}".encode()] for i in range(8)}}
    by_name = {name: _addressof(a) for name, a in kept.items()}
    by_ino = {ino: _addressof(a) for ino, a in kept_ino.items()}
    at, outs = OUT_NAME, _OUTS

    # the cheap crossing, as pyfuse's own callbacks: the name read from the thread's out
    # struct, the answer an Attr's address (PYFUSE_REPLY_AT), which C reads and replies once
    # the callback has returned (with the session's timeouts)
    @ffi.def_extern(name="pyfuse_ll_cb_lookup", onerror=onerror)
    def lookup_floor(h, slot, parent, namelen):
        b = outs[slot] or _out(slot)  # the name, as pyfuse's lookup gets it
        return by_name.get(b[at:at + namelen], -errno.ENOENT)

    @ffi.def_extern(name="pyfuse_ll_cb_getattr", onerror=onerror)
    def getattr_floor(h, slot, ino, fh=None):
        return by_ino[ino]

    _KEPT.append(kept)  # (kept_ino holds the same Attrs and one more, the root's)
    _KEPT.append(kept_ino)


def install_llfuse(at: bool) -> None:
    import pyfuse.compat.llfuse as compat
    from pyfuse import Attr
    from pyfuse.lowlevel._replies import ENTRY_STRUCT

    sys.modules["llfuse"] = compat  # as python -m pyfuse.compat does
    held: list[object] = []
    init, config = compat.init, compat.Config

    def init_floor(ops, mountpoint, options=compat.default_options):  # noqa: ANN001, ANN202
        held.append(ops)
        init(ops, mountpoint, options)
    compat.init = init_floor
    if at:  # C replies an Attr at its address with the session's timeouts: the tree's, 0
        class Untimed(config):  # type: ignore[misc, valid-type]
            def __init__(self, **kw: object) -> None:
                super().__init__(**{**kw, "entry_timeout": 0, "attr_timeout": 0})
        compat.Config = Untimed
    ctx = compat.RequestContext()
    error, put = compat.FUSEError, ENTRY_STRUCT.pack_into
    entry_out, attr_out = lib.PYFUSE_REPLY_ENTRY_OUT, lib.PYFUSE_REPLY_ATTR_OUT
    name_at, outs = OUT_NAME, _OUTS
    copies: dict[int, int] = {}  # --llfuse-at: an EntryAttributes' id -> its copy's address

    def copy(a) -> int:  # noqa: ANN001
        c = Attr(mode=a.st_mode, ino=a.st_ino, nlink=a.st_nlink, size=a.st_size)
        _KEPT.append(c)
        r = copies[id(a)] = _addressof(c)
        return r

    # Each variant's pair is written out: one body testing ``at`` measured 1 % more a W5
    # (29,401 -> 29,684), and a floor is the cheapest the design can be.
    if at:
        @ffi.def_extern(name="pyfuse_ll_cb_lookup", onerror=onerror)
        def lookup_at(h, slot, parent, namelen):
            b = outs[slot] or _out(slot)
            try:
                a = held[0].lookup(parent, b[name_at:name_at + namelen], ctx)
            except error as e:
                return -e.errno
            return copies.get(id(a)) or copy(a)

        @ffi.def_extern(name="pyfuse_ll_cb_getattr", onerror=onerror)
        def getattr_at(h, slot, ino, fh=None):
            try:
                a = held[0].getattr(ino, ctx)
            except error as e:
                return -e.errno
            return copies.get(id(a)) or copy(a)
        return

    # the answer packed inline, the fifteen values read by the frame (as the compat face's
    # pack_entry_into, without its call)
    @ffi.def_extern(name="pyfuse_ll_cb_lookup", onerror=onerror)
    def lookup_llfuse(h, slot, parent, namelen):
        b = outs[slot] or _out(slot)
        try:
            a = held[0].lookup(parent, b[name_at:name_at + namelen], ctx)
        except error as e:
            return -e.errno
        put(b, 0, a.st_mode, a.st_ino, a.st_nlink, a.st_uid, a.st_gid, a.st_size, a.st_blocks,
            a.st_rdev, a.st_blksize, a.st_atime_ns, a.st_mtime_ns, a.st_ctime_ns, a.generation,
            a.entry_timeout, a.attr_timeout)
        return entry_out

    @ffi.def_extern(name="pyfuse_ll_cb_getattr", onerror=onerror)
    def getattr_llfuse(h, slot, ino, fh=None):
        try:
            a = held[0].getattr(ino, ctx)
        except error as e:
            return -e.errno
        b = outs[slot] or _out(slot)
        put(b, 0, a.st_mode, a.st_ino, a.st_nlink, a.st_uid, a.st_gid, a.st_size, a.st_blocks,
            a.st_rdev, a.st_blksize, a.st_atime_ns, a.st_mtime_ns, a.st_ctime_ns, a.generation,
            a.entry_timeout, a.attr_timeout)
        return attr_out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mountpoint")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--cffi", action="store_true")
    which.add_argument("--str", action="store_true")
    which.add_argument("--fs", action="store_true")
    which.add_argument("--ll", action="store_true")
    which.add_argument("--llfuse", action="store_true")
    which.add_argument("--llfuse-at", action="store_true")
    p.add_argument("--single", action="store_true")
    p.add_argument("--nocache", action="store_true")
    p.add_argument("--longcache", action="store_true", help="timeouts of an hour, as tree.py's")
    a = p.parse_args()
    cfg = pyfuse.Config(entry_timeout=0, attr_timeout=0, negative_timeout=0) if a.nocache \
        else pyfuse.Config(entry_timeout=3600, attr_timeout=3600) if a.longcache \
        else pyfuse.Config()
    if a.ll:
        import pyfuse.lowlevel as ll
        from bench.tree_ll import Tree as LLTree
        install_ll()  # after pyfuse.lowlevel registered its own (at import)
        ll.run(LLTree(), a.mountpoint, threads=not a.single, config=cfg, fsname="pyfuse-floor")
        return
    if a.llfuse or a.llfuse_at:
        install_llfuse(a.llfuse_at)  # after pyfuse.lowlevel registered its own (at import)
        from bench.peers import llfuse_tree
        llfuse_tree.main([a.mountpoint, *(["--single"] if a.single else []),
                          *(["--nocache"] if a.nocache else [])])
        return
    (install_cffi if a.cffi else install_str if a.str else install_fs)()
    pyfuse.run(Tree(), a.mountpoint, threads=not a.single, config=cfg, fsname="pyfuse-floor")


if __name__ == "__main__":
    main()
