"""Mounting: :func:`run` (blocking) and :func:`mount` (a context manager serving on a thread).

A :class:`Session` owns one libfuse instance: it builds the argument list, mounts, runs libfuse's
loop (with the GIL released; handlers take it only while they run), and unmounts and destroys on
the way out. Callbacks find the session by its number in ``pyfuse._core.dispatch.SESSIONS``,
held from before the C instance is made until after it is freed, so they never see a dead one.
"""
from __future__ import annotations

import inspect
import logging
import os
from typing import Any

from . import _callbacks  # noqa: F401  (registers the extern "Python" callbacks)
from ._core.context import context
from ._core.convert import config_to_c
from ._core.convert import path as _decode_path
from ._core.mounting import BaseSession, Mounted, serve
from ._core.readdir import Listings
from ._pyfuse_c import ffi, lib
from .operations import Operations, implemented

__all__ = ["Session", "run", "mount", "context"]

log = logging.getLogger("pyfuse")
lib.pyfuse_log_init()

#: Operation name -> its number: the rows of csrc/optable.h, read through lib.
OPS: dict[str, int] = {name[len("PYFUSE_OP_"):].lower(): getattr(lib, name) for name in dir(lib)
                       if name.startswith("PYFUSE_OP_") and name != "PYFUSE_OP_COUNT"}


def _takes(fn: Any, n: int) -> bool:
    """Whether the bound method ``fn`` accepts ``n`` positional arguments."""
    try:
        inspect.signature(fn).bind(*range(n))
    except TypeError:
        return False
    return True


class Session(BaseSession):
    """One mounted filesystem. Use :func:`run` or :func:`mount` rather than this directly.

    Public: ``ops`` (the filesystem), ``mountpoint`` (absolute), ``config``, ``connection``
    (set once mounted), :meth:`mount`, :meth:`loop`, :meth:`stop`, :meth:`invalidate_path`,
    and with ``stats=True`` :meth:`stats` and :meth:`stats_table`. Everything else is the
    callbacks' (private)."""

    #: ioctl's handler gets the C buffer itself and writes its reply there (pyfuse.compat:
    #: fusepy's convention) instead of the input as bytes and the reply as its result.
    _ioctl_in_place = False

    def __init__(self, ops: Operations, mountpoint: str, **kwargs: Any) -> None:
        if not isinstance(ops, Operations):
            raise TypeError("ops must be an instance of a pyfuse.Operations subclass")
        super().__init__(ops, mountpoint, **kwargs)
        self._listings = Listings(self._fail, _decode_path)
        # The bound method of each operation the subclass overrides (None for the others), as
        # _op_<name> for the callbacks, and the mask of their numbers for the C table.
        names = implemented(ops)
        self._opmask = 0
        for name, bit in OPS.items():
            meth = getattr(ops, name) if name in names else None
            setattr(self, "_op_" + name, meth)
            if meth is not None:
                self._opmask |= 1 << bit
        # poll(path, fh, handle): a filesystem that takes the handle can notify readiness
        poll = vars(self)["_op_poll"]
        self._poll_handle = poll is not None and _takes(poll, 3)
        self._start_stats(OPS, self._listings)

    def invalidate_path(self, path: str) -> None:
        """Tell the kernel to drop what it caches of ``path`` (its attributes, its data and
        its name): for a filesystem whose files change behind the kernel's back. Safe from
        any thread; from inside a handler it is sent once the handler has returned (see
        :meth:`pyfuse.lowlevel.Session.invalidate_entry`). Nothing cached is not an error.
        Raises RuntimeError once the session has ended, OSError if the kernel refuses it."""
        self._notify(f"invalidate_path({path!r})", lib.pyfuse_invalidate_path,
                     os.fsencode(path))

    # -- the base's hooks ------------------------------------------------------------------
    def _new_c(self, argc: int, argv: Any) -> Any:
        return lib.pyfuse_new(self._handle, argc, argv, self._opmask,
                              config_to_c(self.config, self._dup_names),
                              self._stats_c(), 0)

    def _where(self, op: str, where: Any) -> str:
        # where: the request's C path (NULL: an unlinked file), or getattr's, already a str
        if where.__class__ is str:
            return f"{op} {where!r}"
        return f"{op} {_decode_path(where)!r}" if where != ffi.NULL else f"{op} (unlinked)"

    def _ended(self) -> None:
        self._listings.close_all()


def run(ops: Operations, mountpoint: str, foreground: bool = True, **kwargs: Any) -> None:
    """Mount ``ops`` at ``mountpoint`` and serve until it is unmounted (``fusermount3 -u``,
    ``umount``) or, when called from the main thread, SIGINT/SIGTERM/SIGHUP arrives; then
    unmount and return. After a signal the requests in progress are answered first (one log
    line says which, if any runs on); a second signal ends it at once (docs/mounting.md,
    "Signals"). A missing mount point raises FileNotFoundError, a missing /dev/fuse or (for a
    user who is not root) fusermount3 an OSError that names it, an unknown option ValueError.

    Keyword arguments: ``threads=True`` (libfuse's multi-threaded loop: idle workers wait for
    requests together and take them in turn, a worker is added when none is idle, up to
    ``max_threads``, default 10; False for one thread), ``sticky`` (pyfuse's own
    multi-threaded loop instead: one worker reads and serves while requests finish quickly,
    and another takes over when a handler has run a millisecond or two; faster on hosts where
    a thread switch costs more than waking an idle CPU, slower where it is the other way round:
    see docs/performance.md),
    ``debug`` (libfuse's request trace, logged on the ``pyfuse`` logger at DEBUG), ``ro``,
    ``allow_other``, ``default_permissions``, ``fsname``, ``subtype``, ``options`` (a dict of
    further ``-o`` mount options, True for a flag; a key that names a :class:`Config` field,
    such as ``attr_timeout`` or ``direct_io``, sets that field of ``config`` instead, with
    ``-o`` style strings accepted: ``{"attr_timeout": "0"}``), ``config`` (a :class:`Config`),
    ``max_threads``, ``clone_fd`` (a ``/dev/fuse`` descriptor per worker, on libfuse's own
    multi-threaded loop), ``signals`` (default: only in the main thread), ``stack`` (mount on
    top of a live FUSE filesystem at the same place; by default that is refused with EBUSY),
    ``stats`` (count and time every request: :meth:`Session.stats`; off by default, and then
    nothing is timed).

    ``foreground=False`` runs as a daemon, as fusepy and libfuse's command-line filesystems do:
    once the mount is live the calling process exits with status 0 (an error before that, such
    as a failed mount, is raised in it as usual), and a forked child serves in a new session,
    in "/", with its standard streams on /dev/null; ``run`` returns in that child when the
    filesystem is unmounted. Call it before starting threads of your own.
    """
    serve(Session(ops, mountpoint, **kwargs), foreground)


class mount(Mounted[Session]):  # noqa: N801  (used as a function: ``with pyfuse.mount(...)``)
    """``with pyfuse.mount(ops, mountpoint, **kwargs) as session:`` mounts, serves on a
    background thread and unmounts on exit. Returns once the kernel mount is live. An error in
    the serving thread (or a handler's KeyboardInterrupt/SystemExit) is re-raised on exit.
    Takes the keyword arguments of :func:`run`.

    The handlers run in this process and need its GIL: a client in the same process must not
    enter the mount while holding the GIL (``mmap`` of a file of the mount; on Python 3.9 and 3.10,
    ``os.DirEntry.stat()``), or it deadlocks; use ``os.lstat(entry.path)`` or a subprocess."""

    def __init__(self, ops: Operations, mountpoint: str, **kwargs: Any) -> None:
        kwargs.setdefault("signals", False)
        super().__init__(Session(ops, mountpoint, **kwargs))
