"""cffi builder for pyfuse._pyfuse_c (out-of-line API mode).

Everything C lives in csrc/: the cdef Python sees (pyfuse_cdef.h), the operation numbers (the
rows of optable.h, written into the cdef here as ``enum pyfuse_op``), the C-to-Python entry
points (callbacks_cdef.h, plain prototypes wrapped here in ``extern "Python+C"``) and the shim
sources (every csrc/*.c).
Compiler and linker flags come from ``pkg-config fuse3``; if libfuse 3 is missing the build stops
with one line naming the packages to install. The sources and flags of the package's other C
module, pyfuse._pull (csrc/cpython/), are here too: setup.py builds it.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = os.path.join(HERE, "csrc")
MIN_FUSE = "3.10"
INSTALL_HINT = (
    f"pyfuse: libfuse 3 (>= {MIN_FUSE}) development files not found; install them first "
    "(Debian/Ubuntu: apt-get install libfuse3-dev fuse3 pkg-config; "
    "Fedora: dnf install fuse3-devel fuse3 pkgconf)"
)


def _pkg_config(*args: str) -> str:
    out = subprocess.run(["pkg-config", *args, "fuse3"], check=True, capture_output=True)
    return out.stdout.decode().strip()


def _fuse_flags() -> tuple[str, list[str], list[str], list[str], list[str]]:
    if shutil.which("pkg-config") is None:
        raise SystemExit(INSTALL_HINT)
    try:
        _pkg_config("--atleast-version=" + MIN_FUSE)
        version = _pkg_config("--modversion")
        cflags = _pkg_config("--cflags").split()
        libs = _pkg_config("--libs").split()
    except subprocess.CalledProcessError:
        raise SystemExit(INSTALL_HINT) from None
    include_dirs = [f[2:] for f in cflags if f.startswith("-I")]
    other_cflags = [f for f in cflags if not f.startswith("-I")]
    library_dirs = [f[2:] for f in libs if f.startswith("-L")]
    libraries = [f[2:] for f in libs if f.startswith("-l")]
    if not any(os.path.exists(os.path.join(d, "fuse.h")) for d in include_dirs):
        raise SystemExit(INSTALL_HINT)
    return version, include_dirs, other_cflags, library_dirs, libraries


def _read(name: str) -> str:
    with open(os.path.join(CSRC, name)) as f:
        return f.read()


def op_names(table: str = "optable.h") -> list[str]:
    """The operations of csrc/optable.h (or ll_optable.h, the inode API's) in table order
    (PYFUSE_OP_<NAME>, PYFUSE_LL_OP_<NAME> is the index)."""
    return re.findall(r"^\s*X\((\w+),", _read(table), re.M)


def op_enum_cdef() -> str:
    """``enum pyfuse_op`` and ``enum pyfuse_ll_op`` for the cdef, from the same rows pyfuse.h
    expands for C."""
    out = ""
    for enum, prefix, table in (("pyfuse_op", "PYFUSE_OP_", "optable.h"),
                                ("pyfuse_ll_op", "PYFUSE_LL_OP_", "ll_optable.h")):
        out += f"enum {enum} {{\n" + "".join(f"    {prefix}{n},\n" for n in op_names(table)) \
            + f"    {prefix}COUNT\n}};\n"
    return out


#: setattr's to_set bits, read from libfuse's header by the compiler.
SET_ATTR = ("MODE", "UID", "GID", "SIZE", "ATIME", "MTIME", "ATIME_NOW", "MTIME_NOW", "CTIME")


version, include_dirs, cflags, library_dirs, libraries = _fuse_flags()
major, minor = (int(x) for x in version.split(".")[:2])
use_version = "312" if (major, minor) >= (3, 12) else "35"

ffibuilder = FFI()
ffibuilder.cdef(op_enum_cdef() + _read("pyfuse_cdef.h")
               + "".join(f"#define FUSE_SET_ATTR_{n} ...\n" for n in SET_ATTR))
ffibuilder.cdef('extern "Python+C" {\n' + _read("callbacks_cdef.h") + "\n"
                + _read("ll_callbacks_cdef.h") + "\n}")

# -O2 and -DNDEBUG last on the compile line, after CPython's flags and a user's CFLAGS
# (setuptools >= 75.7 no longer passes CPython's own -O3 -DNDEBUG: the shim stays optimised)
extra = ["-Wall", "-Wextra", "-std=gnu11", "-O2", "-DNDEBUG"]
if os.environ.get("PYFUSE_CFLAGS"):
    extra += os.environ["PYFUSE_CFLAGS"].split()
ldextra = os.environ.get("PYFUSE_LDFLAGS", "").split()

ffibuilder.set_source(
    "pyfuse._pyfuse_c",
    '#include "pyfuse.h"',
    sources=sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(CSRC, "*.c"))),
    include_dirs=[CSRC, *include_dirs],
    library_dirs=library_dirs,
    libraries=libraries,
    define_macros=[("FUSE_USE_VERSION", use_version), ("_FILE_OFFSET_BITS", "64")],
    extra_compile_args=extra + cflags,
    extra_link_args=ldextra,
)

#: pyfuse._pull (csrc/cpython/pull.c): the readdir engine's pull of a batch from a listing's
#: iterator, the one module written against CPython's own API (its stable ABI, as cffi's
#: module): setup.py builds it beside the shim, with the shim's flags.
PULL_SOURCES = ["csrc/cpython/pull.c"]
PULL_ARGS = {"extra_compile_args": extra, "extra_link_args": ldextra, "libraries": ["dl"]}

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
    sys.exit(0)
