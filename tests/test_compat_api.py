"""pyfuse.compat has every public name of the installed fusepy and mfusepy modules (a new
release that adds one fails here), and the ctypes helpers behave as the originals'."""
from __future__ import annotations

import collections.abc
import contextlib
import ctypes
import ctypes.util
import errno
import functools
import importlib
import inspect
import logging
import os
import platform
import signal
import stat
import traceback
import types
import typing
from typing import Any

import pytest

import pyfuse.compat
import pyfuse.compat.mfusepy

#: The standard library modules the originals import names from: a name the original only
#: re-exports from one of them (``signal``, ``partial``, ``c_int``, ``Iterable``) is not its API.
_STDLIB = (ctypes, ctypes.util, signal, functools, typing, collections.abc, platform,
           traceback, inspect, contextlib, os, stat, errno, logging, __builtins__)


def _reexported(name: str, value: Any) -> bool:
    if isinstance(value, types.ModuleType) or type(value).__name__ == "_Feature":
        return True
    for mod in _STDLIB:
        has = mod.get(name, _STDLIB) if isinstance(mod, dict) else getattr(mod, name, _STDLIB)
        if has is value or (has is not _STDLIB and isinstance(value, int) and has == value):
            return True
    return False


def _public(module: Any) -> set[str]:
    return {n for n in dir(module) if not n.startswith("_")
            and not _reexported(n, getattr(module, n))}


def _original(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except (ImportError, OSError) as e:
        pytest.fail(f"the original {name} does not import here ({e}); `make test` installs it")


@pytest.mark.parametrize("original,ours", [("fuse", pyfuse.compat),
                                           ("mfusepy", pyfuse.compat.mfusepy)])
def test_every_public_name_of_the_original(original: str, ours: Any) -> None:
    orig = _original(original)
    missing = sorted(_public(orig) - set(dir(ours)))
    assert not missing, f"{original} names missing from {ours.__name__}: {missing}"


@pytest.mark.parametrize("original,ours", [("fuse", pyfuse.compat),
                                           ("mfusepy", pyfuse.compat.mfusepy)])
def test_ctypes_structures_have_the_originals_fields(original: str, ours: Any) -> None:
    """The structures a filesystem can touch: the original's fields are ours, with the same
    C types (fusepy's c_stat lacks glibc's trailing reserved words: ours has them)."""
    orig = _original(original)
    for name in ("c_timespec", "c_utimbuf", "c_stat", "c_statvfs", "fuse_context",
                 "c_flock_t", "fuse_buf", "fuse_bufvec"):
        if not hasattr(orig, name):
            continue
        theirs = {f[0]: ctypes.sizeof(f[1]) for f in getattr(orig, name)._fields_}
        mine = {f[0]: ctypes.sizeof(f[1]) for f in getattr(ours, name)._fields_}
        assert {k: v for k, v in mine.items() if k in theirs} == theirs, name
        if original == "mfusepy":
            assert ctypes.sizeof(getattr(ours, name)) == ctypes.sizeof(getattr(orig, name)), name


@pytest.mark.parametrize("original,ours", [("fuse", pyfuse.compat),
                                           ("mfusepy", pyfuse.compat.mfusepy)])
def test_helpers_behave_as_the_originals(original: str, ours: Any) -> None:
    orig = _original(original)
    attrs = {"st_mode": stat.S_IFREG | 0o644, "st_size": 12345, "st_nlink": 2,
             "st_atime": 1_600_000_000.25, "st_mtime": 1_500_000_000.5, "st_bogus": 1}
    for use_ns, a in ((False, attrs), (True, dict(attrs, st_atime=1_600_000_000_250_000_001,
                                                   st_mtime=1_500_000_000_500_000_002))):
        theirs, mine = orig.c_stat(), ours.c_stat()
        orig.set_st_attrs(theirs, a, use_ns)
        ours.set_st_attrs(mine, a, use_ns)
        for f in ("st_mode", "st_size", "st_nlink"):
            assert getattr(mine, f) == getattr(theirs, f)
        for f in ("st_atimespec", "st_mtimespec"):
            assert (getattr(mine, f).tv_sec, getattr(mine, f).tv_nsec) == \
                (getattr(theirs, f).tv_sec, getattr(theirs, f).tv_nsec)
            assert ours.time_of_timespec(getattr(mine, f), use_ns) == \
                orig.time_of_timespec(getattr(theirs, f), use_ns)
    if original == "mfusepy":
        assert ours.get_fuse_version() == (orig.fuse_version_major, orig.fuse_version_minor) \
            or ours.get_fuse_version()[0] == 3
        with pytest.raises(NotImplementedError, match="fuse_main_real"):
            ours.fuse_main_real(0, None, None, 0, None)
