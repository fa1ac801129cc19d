"""Build smoke tests: need no /dev/fuse. The compiled module matches the Python side, every
callback is defined, and a machine without libfuse3 gets one clear line, not a traceback."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import pyfuse
from pyfuse import types
from pyfuse._pyfuse_c import ffi, lib
from pyfuse.operations import Operations

pytestmark = pytest.mark.nofuse
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_struct_layouts_match_packing():
    assert ffi.sizeof("struct pyfuse_attr") == types.ATTR_STRUCT.size == 96
    assert ffi.sizeof("struct pyfuse_statvfs") == types.STATVFS_STRUCT.size
    a = ffi.new("struct pyfuse_attr *")
    ffi.memmove(a, types.pack_attr(pyfuse.Attr(mode=0o100644, ino=7, size=-1 & 0xFFFF,
                                               mtime_ns=-5)), 96)
    assert (a.mode, a.ino, a.size, a.mtime_ns) == (0o100644, 7, 0xFFFF, -5)


def test_every_operation_has_an_op_number():
    methods = {n for n, v in vars(Operations).items() if callable(v) and not n.startswith("_")}
    numbered = {n for n in methods if hasattr(lib, "PYFUSE_OP_" + n.upper())}
    assert numbered == methods
    assert lib.PYFUSE_OP_COUNT == len(methods) <= 64


def test_callbacks_are_defined():
    import pyfuse._callbacks as cb

    with open(os.path.join(ROOT, "csrc", "callbacks_cdef.h")) as f:
        declared = {line.split("(")[0].split()[-1].lstrip("*") for line in f
                    if "pyfuse_cb_" in line and "(" in line}
    assert declared and all(hasattr(cb, name) for name in declared)


def test_attr_from_stat_roundtrip():
    st = os.stat(ROOT)
    a = pyfuse.Attr.from_stat(st)
    assert types.pack_attr(a) == types.pack_attr(st)
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
