"""The translation under :mod:`pyfuse.compat`: a fusepy-style ``Operations`` object served as a
:class:`pyfuse.Operations`, on pyfuse's own session, loop and C readdir engine.

:func:`adapt` builds a :class:`pyfuse.Operations` subclass with a method for each operation
the fusepy object implements (and only those, so pyfuse registers only those with libfuse).
Each method converts pyfuse's arguments to fusepy's (str paths in the FUSE object's encoding,
float or nanosecond times, ``raw_fi`` objects), calls the filesystem as fusepy does (through
its ``__call__`` when the class defines one: fusepy's ``LoggingMixIn`` and filesystems that
wrap every call rely on it), and converts the result back (stat dicts to :class:`pyfuse.Attr`,
negative ints to errnos). Errors follow fusepy's policy (:class:`CompatSession`).
"""
from __future__ import annotations

import errno
import functools
import inspect
import itertools
import logging
import os
from typing import Any, Callable, Optional

from ..errors import BadListing
from ..operations import Operations as _PyfuseOperations
from ..session import Session
from ._convert import RawFileInfo
from ._methods import METHODS

__all__ = ["adapt", "CompatSession", "implemented"]

log = logging.getLogger("pyfuse")


class CompatSession(Session):
    """A session with fusepy's error policy: an OSError with a positive errno gives that errno;
    any other Exception gives EINVAL with one logged traceback (pyfuse itself answers EIO, and
    ENOSYS for NotImplementedError); KeyboardInterrupt and SystemExit stop the filesystem and
    are re-raised where it was mounted (``FUSE()``). ioctl handlers write their reply into
    the buffer whose address they get as ``data``, as on fusepy."""

    _ioctl_in_place = True
    _dup_names = True  # fusepy hands libfuse a listing as it is
    _plain_fh = True  # file handles of all 64 bits, as fusepy's (libfuse's uint64_t)

    def _fail(self, exc: BaseException, op: str, where: Any = None) -> int:
        if isinstance(exc, OSError) and isinstance(exc.errno, int) and exc.errno > 0:
            return -exc.errno
        if isinstance(exc, Exception) and not isinstance(exc, BadListing):
            if where is not None:  # a C path, or one already a str (getattr's, read's)
                op = self._where(op, where)
            log.error("Uncaught exception from FUSE operation %s, returning errno.EINVAL.", op,
                      exc_info=exc)
            return -errno.EINVAL
        return super()._fail(exc, op, where)


def _caller(ops: Any, name: str, flavor: str) -> Callable[..., Any]:
    """How the original calls operation ``name``. fusepy: ``ops(name, *args)`` when the class
    defines its own ``__call__`` (fusepy's LoggingMixIn does), else the method itself (the
    same result as fusepy's base ``__call__``, one call cheaper). mfusepy: the attribute
    (``ops.name``, through the class's ``__getattribute__``, which mfusepy's LoggingMixIn
    overrides), never ``__call__``."""
    if flavor == "mfusepy":
        return getattr(ops, name)  # type: ignore[no-any-return]
    from . import Operations as CompatOperations  # the package imports this module

    call = next((vars(c)["__call__"] for c in type(ops).__mro__ if "__call__" in vars(c)), None)
    if call is not None and call is not CompatOperations.__dict__["__call__"]:
        return functools.partial(ops, name)
    return getattr(ops, name)  # type: ignore[no-any-return]


def _as_called(calls: dict[str, Any], ops: Any, flavor: str, raw_fi: bool) -> None:
    """The operations whose arguments the originals choose per call: ``calls[name]`` becomes
    a function of pyfuse's arguments that passes exactly what the original passes.

    - create without raw_fi, ``(path, mode, flags)``: fusepy passes ``(path, mode)``; mfusepy
      ``(path, mode)`` when the attribute ``ops.create`` has two parameters (as
      ``inspect.signature`` sees it: through mfusepy's LoggingMixIn a wrapper of ``*args``,
      hence three), else ``(path, mode, flags)``.
    - truncate, ``(path, length, fh or None)``: fusepy passes the fh when libfuse has one
      (its ftruncate), mfusepy (libfuse 3) never.
    """
    create = calls.get("create")
    if create is not None and not raw_fi:
        if flavor == "fusepy" or len(inspect.signature(ops.create).parameters) == 2:
            calls["create"] = lambda path, mode, flags: create(path, mode)
    truncate = calls.get("truncate")
    if truncate is not None:
        if flavor == "fusepy":
            calls["truncate"] = lambda path, length, fh: \
                truncate(path, length) if fh is None else truncate(path, length, fh)
        else:
            calls["truncate"] = lambda path, length, fh: truncate(path, length)


#: fusepy/mfusepy operations pyfuse.compat cannot serve, and why (refused at mount time).
UNSUPPORTED = {
    "bmap": "bmap serves only block-device-backed filesystems (fuseblk), which pyfuse does not "
            "mount",
    "read_buf": "mfusepy's read_buf hands out libfuse's fuse_bufvec; implement read instead",
    "write_buf": "mfusepy's write_buf hands out libfuse's fuse_bufvec; implement write instead",
    "poll": "mfusepy's poll takes libfuse's poll handle and revents pointer; pyfuse's own "
            "Operations.poll(path, fh) returns the mask",
}


def implemented(ops: Any) -> set[str]:
    """The fusepy operations ``ops`` implements: attributes that are not None and not marked
    ``libfuse_ignore`` (mfusepy's mark, which compat's base class also uses for the defaults
    that answer as libfuse does without them). An operation of :data:`UNSUPPORTED` raises
    NotImplementedError naming it."""
    for name, why in UNSUPPORTED.items():
        value = getattr(ops, name, None)
        if value is not None and not getattr(value, "libfuse_ignore", False):
            raise NotImplementedError(f"pyfuse.compat: {type(ops).__name__}.{name} cannot be "
                                      f"served: {why}")
    names = set()
    for name in METHODS:
        value = getattr(ops, name, None)
        if value is not None and not getattr(value, "libfuse_ignore", False):
            names.add(name)
    if "readdir_with_offset" in names:
        names.add("readdir")
    if "init_with_config" in names:
        names.add("init")
    return names


class _Base(_PyfuseOperations):
    """State the generated methods share (set by :func:`adapt`)."""

    _use_ns: bool
    _plus_getattr: bool
    _getattr: Optional[Callable[..., Any]]
    _files: dict[int, tuple[int, int]]
    _next_fh: Callable[[], int]

    def _fi(self, key: int) -> RawFileInfo:
        """What libfuse hands a raw_fi filesystem on each call on an open file: a
        fuse_file_info with the fh the filesystem set at open and the open flags (the per-open
        flags, direct_io and the like, are not carried over, as in libfuse)."""
        fh, flags = self._files.get(key, (key, 0))
        fi = RawFileInfo(flags)
        fi.fh = fh
        return fi


def adapt(ops: Any, raw_fi: bool = False, encoding: str = "utf-8",
          errors: str = "surrogateescape", readdir_getattr: bool = True,
          flavor: str = "fusepy") -> _PyfuseOperations:
    """A :class:`pyfuse.Operations` serving the fusepy-style ``ops``, calling its methods as
    ``flavor`` ("fusepy" or "mfusepy") does.

    ``readdir_getattr``: when the kernel asks for readdirplus and ``readdir`` returned bare
    names (or type-only attributes), call ``getattr`` for each entry inside that request, so
    the kernel need not send a LOOKUP per entry afterwards."""
    if flavor not in ("fusepy", "mfusepy"):
        raise ValueError(f"flavor must be 'fusepy' or 'mfusepy', not {flavor!r}")
    names = implemented(ops)
    calls = {name: _caller(ops, name, flavor) for name in names if hasattr(ops, name)}
    _as_called(calls, ops, flavor, raw_fi)
    if "readdir_with_offset" in calls:
        calls["readdir"] = calls.pop("readdir_with_offset")
    use_ns = bool(getattr(ops, "use_ns", False))
    decode: Optional[Callable[[str], str]] = None
    if encoding.lower().replace("_", "-") not in ("utf-8", "utf8") or errors != "surrogateescape":
        def decode(p: str) -> str:
            return os.fsencode(p).decode(encoding, errors)
    namespace: dict[str, Any] = {}
    for name in names:
        maker = METHODS.get(name)
        if maker is not None and maker[0] is not None:
            namespace[maker[0]] = maker[1](calls, name, raw_fi, use_ns, "readdir_with_offset"
                                           in names, decode)
    cls = type(f"Compat{type(ops).__name__}", (_Base,), namespace)
    inst = cls()
    inst._use_ns = use_ns
    inst._plus_getattr = readdir_getattr and "getattr" in calls
    inst._getattr = calls.get("getattr")
    inst._files = {}
    inst._next_fh = itertools.count(1).__next__  # atomic under the GIL
    return inst



