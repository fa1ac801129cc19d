"""Build smoke tests: need no /dev/fuse. The compiled module matches the Python side, every
callback is defined, and a machine without libfuse3 gets one clear line, not a traceback."""
from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

import pyfuse
from pyfuse._core import convert
from pyfuse._core.dispatch import EXTERNS
from pyfuse._pyfuse_c import ffi, lib
from pyfuse.operations import Operations
from pyfuse.session import OPS

pytestmark = pytest.mark.nofuse
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _optable(name: str = "optable.h") -> list[tuple[str, str, str, str]]:
    """The rows of csrc/optable.h (or ll_optable.h): (NAME, member, trampoline, WHEN)."""
    with open(os.path.join(ROOT, "csrc", name)) as f:
        return re.findall(r"^\s*X\((\w+),\s*(\w+),\s*(\w+),\s*(\w+)\)", f.read(), re.M)


def _declared_callbacks() -> set[str]:
    names = set()
    for header in ("callbacks_cdef.h", "ll_callbacks_cdef.h"):
        with open(os.path.join(ROOT, "csrc", header)) as f:
            names |= {m for m in re.findall(r"\b(pyfuse_(?:ll_)?cb_\w+)\(", f.read())}
    return names


def test_struct_layouts_match_packing():
    """Python packs struct pyfuse_attr field by field in Attr's order: every field's offset and
    size must be what the compiler laid out."""
    assert ffi.sizeof("struct pyfuse_attr") == convert.ATTR_STRUCT.size == 96
    assert ffi.sizeof("struct pyfuse_statvfs") == convert.STATVFS_STRUCT.size
    assert ctypes.sizeof(pyfuse.Attr) == 96  # an Attr is struct pyfuse_attr itself
    for i, name in enumerate(pyfuse.Attr.FIELDS):
        assert ffi.offsetof("struct pyfuse_attr", name) == 8 * i == getattr(pyfuse.Attr,
                                                                             name).offset, name
    a = ffi.new("struct pyfuse_attr *")
    ffi.memmove(a, convert.pack_attr(pyfuse.Attr(mode=0o100644, ino=7, size=-1 & 0xFFFF,
                                                 mtime_ns=-5)), 96)
    assert (a.mode, a.ino, a.size, a.mtime_ns) == (0o100644, 7, 0xFFFF, -5)
    # struct pyfuse_out, as lowlevel/_callbacks.py writes it (attr, then "=Qdd"; open's "=QQ")
    # and the path API's read its fdr ("=i4xqq")
    assert [ffi.offsetof("struct pyfuse_out", f) for f in
            ("attr", "generation", "entry_timeout", "attr_timeout", "fh", "open_bits", "fdr",
             "name")] == [0, 96, 104, 112, 120, 128, 136, 160]
    for i, name in enumerate(pyfuse.StatVFS._fields):
        assert ffi.offsetof("struct pyfuse_statvfs", name[2:]) == 8 * i, name


def test_one_row_per_operation():
    """csrc/optable.h has one row per Operations method and no other; lib's numbers are the
    rows' order (build_ffi.py wrote them into the cdef, the compiler checked them against C's)."""
    rows = [r[0] for r in _optable()]
    methods = {n for n, v in vars(Operations).items() if callable(v) and not n.startswith("_")}
    assert sorted(n.lower() for n in rows) == sorted(methods)
    assert OPS == {n.lower(): i for i, n in enumerate(rows)}
    assert lib.PYFUSE_OP_COUNT == len(rows) <= 64


def test_every_operation_has_its_callback():
    """Each row's entry point pyfuse_cb_<name> is declared for C and registered in Python (an
    extern "Python" function without a def_extern answers 0, which the kernel reads as
    success); every declared entry point is registered."""
    import pyfuse._callbacks  # noqa: F401
    import pyfuse.lowlevel._callbacks  # noqa: F401

    declared = _declared_callbacks()
    assert {"pyfuse_cb_" + r[0].lower() for r in _optable()} <= declared
    assert {"pyfuse_ll_cb_" + r[0].lower() for r in _optable("ll_optable.h")
            if r[0] not in LL_NO_METHOD} <= declared
    assert declared == EXTERNS


#: Rows of ll_optable.h served by another row's method (readdir, forget).
LL_NO_METHOD = {"READDIRPLUS", "FORGET_MULTI"}


def test_ll_one_row_per_operation():
    """csrc/ll_optable.h has one row per pyfuse.lowlevel.Operations method (and the two rows
    served by readdir and forget); lib's numbers are the rows' order."""
    from pyfuse.lowlevel import Operations as LLOperations
    from pyfuse.lowlevel.session import OPS as LL_OPS

    rows = [r[0] for r in _optable("ll_optable.h")]
    methods = {n for n, v in vars(LLOperations).items() if callable(v) and not n.startswith("_")}
    assert sorted(n.lower() for n in rows if n not in LL_NO_METHOD) == sorted(methods)
    assert LL_OPS == {n.lower(): i for i, n in enumerate(rows)}
    assert lib.PYFUSE_LL_OP_COUNT == len(rows) <= 64


def test_ll_every_row_fills_its_member():
    """pyfuse_ll_fill_ops puts each row's member in struct fuse_lowlevel_ops when the row
    says: ALWAYS, OWN (its own bit), DIRS (any directory operation), READDIR (readdir's)."""
    rows = _optable("ll_optable.h")
    always = {member for _, member, _, when in rows if when == "ALWAYS"}
    dirs = {member for _, member, _, when in rows if when == "DIRS"}
    assert lib.pyfuse_ll_ops_filled(0) == len(always)
    assert lib.pyfuse_ll_ops_filled((1 << 64) - 1) == len({r[1] for r in rows})
    for name, member, _, when in rows:
        bit = 1 << getattr(lib, "PYFUSE_LL_OP_" + name)
        if when == "OWN":
            extra = {member} | (dirs if name in ("READDIR", "FSYNCDIR") else set()) \
                | ({"readdirplus"} if name == "READDIR" else set())
            assert lib.pyfuse_ll_ops_filled(bit) == len(always | extra), name
        elif when in ("DIRS", "READDIR"):
            assert member in dirs or member == "readdirplus", name
        else:
            assert when == "ALWAYS" and member in always, name


def test_every_row_fills_its_member():
    """pyfuse_fill_ops puts each row's member in struct fuse_operations exactly when the row
    says: ALWAYS on every mount, OWN for the row's own bit, DIRS for any directory operation."""
    rows = _optable()
    always = {member for _, member, _, when in rows if when == "ALWAYS"}
    assert lib.pyfuse_ops_filled(0) == len(always)
    assert lib.pyfuse_ops_filled((1 << 64) - 1) == len({r[1] for r in rows})
    dirs = {member for _, member, _, when in rows if when == "DIRS"}
    for name, member, _, when in rows:
        bit = 1 << getattr(lib, "PYFUSE_OP_" + name)
        if when == "OWN":
            extra = {member} | (dirs if name in ("READDIR", "FSYNCDIR") else set())
            assert lib.pyfuse_ops_filled(bit) == len(always | extra), name
        elif when == "DIRS":
            assert lib.pyfuse_ops_filled(bit) == len(always | dirs), name
        else:
            assert when == "ALWAYS" and member in always, name


def test_shared_constants():
    """The constants C and Python share come from the cdef (readdir.c checks their relation at
    compile time); Python's engine uses them."""
    from pyfuse._core import readdir

    assert readdir.READDIR_BATCH == lib.PYFUSE_READDIR_BATCH
    assert lib.PYFUSE_DUP_SLOTS >= 2 * lib.PYFUSE_READDIR_BATCH
    assert (lib.PYFUSE_DIR_UNKNOWN, lib.PYFUSE_DIR_POSITIONAL, lib.PYFUSE_DIR_OFFSETS) == (0, 1, 2)


def test_attr_from_stat_roundtrip():
    st = os.stat(ROOT)
    a = pyfuse.Attr.from_stat(st)
    assert convert.pack_attr(a) == convert.pack_attr(st)
    assert a.copy() == a and a.copy() is not a


def test_public_api_names():
    for name in ("Operations", "Attr", "DirEntry", "StatVFS", "Config", "FuseError", "run",
                 "mount", "context", "FileInfo"):
        assert hasattr(pyfuse, name)
    assert pyfuse.DirEntry("x") == ("x", None, 0)
    assert pyfuse.Config().entry_timeout == 1.0


def test_missing_libfuse_gives_one_line(tmp_path):
    env = dict(os.environ, PKG_CONFIG_LIBDIR=str(tmp_path), PKG_CONFIG_PATH=str(tmp_path))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "build_ffi.py")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "libfuse3-dev" in lines[0], r.stderr


#: builds pyfuse._pull as setup.py declares it, with build_ffi.py's sources and flags
_BUILD_PULL = """
import sys
sys.path.insert(0, sys.argv[1])
import build_ffi
from setuptools import Distribution, Extension
ext = Extension("pyfuse._pull", build_ffi.PULL_SOURCES, py_limited_api=True,
                define_macros=[("Py_LIMITED_API", "0x03090000")], **build_ffi.PULL_ARGS)
dist = Distribution({"ext_modules": [ext], "script_args": [
    "build_ext", "--build-temp", sys.argv[2], "--build-lib", sys.argv[2], "--force"]})
dist.parse_command_line()
dist.run_commands()
"""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("module,source", [("shim", "lowlevel.c"), ("pull", "pull.c")])
def test_modules_are_optimised_whatever_cflags_say(tmp_path, module, source):
    """setuptools >= 75.7 no longer passes CPython's -O3 -DNDEBUG, and a user's CFLAGS may say
    -O0: build_ffi.py puts -O2 -DNDEBUG last on every compile line of the shim (checked on the
    line that compiles csrc/lowlevel.c, the hot trampolines) and of pyfuse._pull."""
    if not os.path.exists(os.path.join(ROOT, "build_ffi.py")):
        pytest.skip("needs the source tree's build_ffi.py")
    if importlib.util.find_spec("setuptools") is None or shutil.which("cc") is None \
            or shutil.which("pkg-config") is None \
            or subprocess.run(["pkg-config", "--exists", "fuse3"]).returncode != 0:
        pytest.skip("building the shim needs setuptools, a C compiler and libfuse3's pkg-config")
    # a copy: the compiler writes its objects beside the sources (a link would put them into
    # the checkout's csrc/, where make would then try to rebuild them)
    shutil.copytree(os.path.join(ROOT, "csrc"), tmp_path / "csrc")
    code = _BUILD_PULL if module == "pull" else (
        "import sys; sys.path.insert(0, sys.argv[1]); import build_ffi; "
        "build_ffi.ffibuilder.compile(tmpdir=sys.argv[2], verbose=True)")
    env = dict(os.environ, CFLAGS="-O0 -UNDEBUG")
    out = subprocess.run([sys.executable, "-c", code, ROOT, str(tmp_path)], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=280)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    line = next(ln for ln in (out.stdout + out.stderr).splitlines() if source in ln
                and " -c " in ln)
    flags = [f for f in line.split() if re.fullmatch(r"-O\w*|-[DU]NDEBUG", f)]
    assert "-O0" in flags and "-UNDEBUG" in flags  # the user's CFLAGS reached the line...
    assert flags[-2:] == ["-O2", "-DNDEBUG"], flags  # ...and the shim's own come last
