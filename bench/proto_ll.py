"""The cheapest ``extern "Python"`` design I can think of for the inode API's W5, outside pyfuse:
a prototype that runs the benchmark tree's own handlers (bench/tree_ll.py's ``Tree``, written
as docs/lowlevel.md teaches) behind a few dozen lines of C and cffi, so that the per-request
target can be compared with what any cffi design would cost, not only with pyfuse's.

    python bench/proto_ll.py MOUNTPOINT [--single] [--nocache]
    python bench/callgrind.py --impls llfuse,pyfuse-ll,proto-ll --workloads w5

The shape: libfuse's low-level API, its single-threaded ``fuse_session_loop`` (the GIL let go
by cffi around the loop, taken by each upcall); lookup and getattr only (W5: two LOOKUPs and a
GETATTR a ``stat``; every timeout 0, so the flags are accepted and change nothing). C copies
lookup's name into one static out struct and calls a callback with integers only (the parent
and the name's length, or the inode number); the callback, found by nothing (a module global),
decodes the name, calls the filesystem's handler, copies the returned ``Attr`` into the struct
by a slice assignment and returns 0 or a negative errno; C converts the attributes and replies
after the upcall has returned. What it leaves out that pyfuse does: sessions (several mounts in
one process), threads (a struct per thread), lookup counting, ``async def`` handlers, checking
what the handler returned (a wrong type is a TypeError here, whose traceback cffi prints), and
every operation but these two (anything else: ENOSYS).

The module is built with the cffi this Python has (into bench/build/proto_ll-cffiVERSION/);
the libfuse flags come from ``pkg-config fuse3``.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.dirname(HERE))

CDEF = """
struct proto_attr { uint64_t mode, ino, nlink, uid, gid; int64_t size, blocks; uint64_t rdev;
                    int64_t blksize, atime_ns, mtime_ns, ctime_ns; };
struct proto_out { struct proto_attr attr; char name[256]; };
extern "Python" int proto_cb_lookup(uint64_t parent, int namelen);
extern "Python" int proto_cb_getattr(uint64_t ino);
extern "Python" int64_t proto_cb_lookup_at(uint64_t parent, int namelen);
extern "Python" int64_t proto_cb_getattr_at(uint64_t ino);
struct proto_out *proto_out(void);
int proto_run(const char *mountpoint, int by_address);
"""

SOURCE = r"""
#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>
#include <errno.h>
#include <string.h>

struct proto_attr { uint64_t mode, ino, nlink, uid, gid; int64_t size, blocks; uint64_t rdev;
                    int64_t blksize, atime_ns, mtime_ns, ctime_ns; };
struct proto_out { struct proto_attr attr; char name[256]; };
static int proto_cb_lookup(uint64_t parent, int namelen);
static int proto_cb_getattr(uint64_t ino);
static int64_t proto_cb_lookup_at(uint64_t parent, int namelen);
static int64_t proto_cb_getattr_at(uint64_t ino);

static struct proto_out out; /* one thread: one struct */
static int by_address;       /* the callbacks return the Attr's address (--by-address) */

/* the answer: copied into out.attr by the callback (0), or at the address it returned (> 0;
 * the callback keeps the object alive until its next call) */
static const struct proto_attr *answer_of(int64_t res)
{
    return res == 0 ? &out.attr : (const struct proto_attr *)(uintptr_t)res;
}

static struct proto_out *proto_out(void) { return &out; }

static void to_stat(const struct proto_attr *a, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_mode = (mode_t)a->mode;
    st->st_ino = (ino_t)a->ino;
    st->st_nlink = (nlink_t)a->nlink;
    st->st_uid = (uid_t)a->uid;
    st->st_gid = (gid_t)a->gid;
    st->st_size = (off_t)a->size;
    st->st_blocks = (blkcnt_t)a->blocks;
    st->st_rdev = (dev_t)a->rdev;
    st->st_blksize = (blksize_t)a->blksize;
    st->st_atim.tv_sec = a->atime_ns / 1000000000;
    st->st_atim.tv_nsec = a->atime_ns % 1000000000;
    st->st_mtim.tv_sec = a->mtime_ns / 1000000000;
    st->st_mtim.tv_nsec = a->mtime_ns % 1000000000;
    st->st_ctim.tv_sec = a->ctime_ns / 1000000000;
    st->st_ctim.tv_nsec = a->ctime_ns % 1000000000;
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct fuse_entry_param e;
    size_t n = strlen(name);
    int64_t res;

    if (n >= sizeof out.name) {
        fuse_reply_err(req, ENAMETOOLONG);
        return;
    }
    memcpy(out.name, name, n);
    res = by_address ? proto_cb_lookup_at(parent, (int)n) : proto_cb_lookup(parent, (int)n);
    if (res < 0) {
        fuse_reply_err(req, (int)-res);
        return;
    }
    memset(&e, 0, sizeof e);
    e.ino = answer_of(res)->ino;
    to_stat(answer_of(res), &e.attr);
    fuse_reply_entry(req, &e);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct stat st;
    int64_t res = by_address ? proto_cb_getattr_at(ino) : proto_cb_getattr(ino);

    (void)fi;
    if (res < 0) {
        fuse_reply_err(req, (int)-res);
        return;
    }
    to_stat(answer_of(res), &st);
    fuse_reply_attr(req, &st, 0);
}

static const struct fuse_lowlevel_ops ops = {.lookup = ll_lookup, .getattr = ll_getattr};

static int proto_run(const char *mountpoint, int address)
{
    char *argv[] = {"proto_ll", "-o", "fsname=proto-ll", NULL};
    struct fuse_args args = FUSE_ARGS_INIT(3, argv);
    struct fuse_session *se = fuse_session_new(&args, &ops, sizeof ops, NULL);
    int res = 1;

    by_address = address;
    if (se == NULL)
        return 1;
    if (fuse_session_mount(se, mountpoint) == 0) {
        res = fuse_session_loop(se);
        fuse_session_unmount(se);
    }
    fuse_session_destroy(se);
    return res;
}
"""


def build() -> str:
    """Compile the prototype module (once for each cffi version; again when this file is
    newer); returns the directory it is in."""
    import glob

    import cffi

    where = os.path.join(HERE, "build", f"proto_ll-cffi{cffi.__version__}")
    built = glob.glob(os.path.join(where, "_proto_ll*.so"))
    if built and os.path.getmtime(built[0]) >= os.path.getmtime(__file__):
        return where
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], capture_output=True,
                           text=True, check=True).stdout
    inc = [f[2:] for f in shlex.split(flags) if f.startswith("-I")]
    libs = [f[2:] for f in shlex.split(flags) if f.startswith("-l")]
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    ffi.set_source("_proto_ll", SOURCE, include_dirs=inc, libraries=libs,
                   extra_compile_args=["-O2", "-DNDEBUG"])
    os.makedirs(where, exist_ok=True)
    ffi.compile(tmpdir=where, verbose=False)
    return where


def serve(mountpoint: str, by_address: bool = False) -> int:
    """Mount the benchmark tree at ``mountpoint`` through the prototype until unmounted."""
    from bench.tree_ll import Tree
    from pyfuse import Attr

    sys.path.insert(0, build())
    from _proto_ll import ffi, lib  # type: ignore[import-not-found]

    tree = Tree()
    size = ffi.sizeof("struct proto_attr")
    if size != ctypes.sizeof(Attr):  # the same twelve fields as pyfuse's struct pyfuse_attr
        raise SystemExit(f"proto_ll: struct proto_attr is {size} bytes, pyfuse's Attr "
                         f"{ctypes.sizeof(Attr)}")
    at = ffi.offsetof("struct proto_out", "name")
    buf = ffi.buffer(lib.proto_out(), ffi.sizeof("struct proto_out"))
    lookup, getattr_ = tree.lookup, tree.getattr

    @ffi.def_extern()
    def proto_cb_lookup(parent, namelen):  # noqa: ANN001, ANN202
        try:
            buf[:size] = lookup(parent, buf[at:at + namelen].decode())
        except OSError as e:
            return -e.errno
        return 0

    @ffi.def_extern()
    def proto_cb_getattr(ino):  # noqa: ANN001, ANN202
        try:
            buf[:size] = getattr_(ino, None)
        except OSError as e:
            return -e.errno
        return 0

    keep = [None]  # the last answer given by address, alive until C has read it
    addressof = ctypes.addressof

    @ffi.def_extern()
    def proto_cb_lookup_at(parent, namelen):  # noqa: ANN001, ANN202
        try:
            a = lookup(parent, buf[at:at + namelen].decode())
        except OSError as e:
            return -e.errno
        keep[0] = a
        return addressof(a)

    @ffi.def_extern()
    def proto_cb_getattr_at(ino):  # noqa: ANN001, ANN202
        try:
            a = getattr_(ino, None)
        except OSError as e:
            return -e.errno
        keep[0] = a
        return addressof(a)

    return int(lib.proto_run(mountpoint.encode(), by_address))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mountpoint")
    p.add_argument("--single", action="store_true", help="accepted: always one thread")
    p.add_argument("--nocache", action="store_true", help="accepted: every timeout is 0")
    p.add_argument("--by-address", action="store_true",
                   help="the callbacks return the Attr's address instead of copying it")
    a = p.parse_args()
    raise SystemExit(serve(a.mountpoint, a.by_address))


if __name__ == "__main__":
    main()
