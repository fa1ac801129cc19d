"""Mounting an inode-API filesystem: :func:`run`, :func:`mount` and :class:`Session`, with
the lookup counts and the kernel cache notifications.

The life cycle, options and loop are the path API's (:mod:`pyfuse._core.mounting`); the C
session is libfuse's low-level one (csrc/lowlevel.c).
"""
from __future__ import annotations

import asyncio
import inspect
import os
import threading
from typing import Any

from .._core.context import CURRENT
from .._core.convert import config_to_c
from .._core.convert import path as _decode
from .._core.dispatch import log
from .._core.mounting import BaseSession, Mounted, serve
from .._core.readdir import PENDING, Listings
from .._pyfuse_c import ffi, lib
from . import _callbacks  # noqa: F401  (registers the extern "Python" callbacks)
from ._aio import Bridge
from ._replies import Refused
from .operations import Operations, implemented

__all__ = ["Session", "run", "mount", "lookups", "OPS"]

#: Operation name -> its number: the rows of csrc/ll_optable.h, read through lib.
OPS: dict[str, int] = {name[len("PYFUSE_LL_OP_"):].lower(): getattr(lib, name)
                       for name in dir(lib)
                       if name.startswith("PYFUSE_LL_OP_") and name != "PYFUSE_LL_OP_COUNT"}
#: Rows served by another row's method.
_NO_METHOD = {"readdirplus", "forget_multi"}


def _same(x: Any) -> Any:
    return x


class _NoForeign:
    """Session._foreign of a session without one: a class no handler returns."""


class Session(BaseSession):
    """One mounted inode-API filesystem. Use :func:`run` or :func:`mount`.

    Public: ``ops``, ``mountpoint``, ``config``, ``connection``, :meth:`mount`, :meth:`loop`,
    :meth:`stop`, :meth:`lookups`, :meth:`lookups_held`, ``forget_requests``, ``event_loop``,
    :meth:`unmounted`, the notifications
    :meth:`invalidate_inode`, :meth:`invalidate_entry`, :meth:`notify_delete`,
    :meth:`notify_store`, and with ``stats=True`` :meth:`stats` and :meth:`stats_table`."""

    #: Whether handlers may return packed entries (``bytes``, _replies.ENTRY_STRUCT):
    #: pyfuse.compat's llfuse and pyfuse3 faces, whose ``to_entry`` packs and checks them.
    _packed = False
    #: A foreign entry type whose objects handlers may return as they are (pyfuse.compat's
    #: EntryAttributes, given by its ``serve_entries``; a class no handler returns: none), with
    #: ``_pack_foreign(buf, obj)``, which packs one into the thread's out struct as
    #: _replies.ENTRY_STRUCT (struct.error if it cannot; C checks the attributes and the
    #: timeouts), and ``_convert``, to a packed entry or an Entry, for one the packing
    #: refuses. (Instance attributes when set: plain functions.) Only the answering callbacks
    #: take one, from a synchronous handler (the llfuse face's are all synchronous); the
    #: general reply, which an async handler's answer takes, does not.
    _foreign: type = _NoForeign
    _pack_foreign: Any = None
    _convert: Any = None

    def __init__(self, ops: Operations, mountpoint: str, **kwargs: Any) -> None:
        if not isinstance(ops, Operations):
            raise TypeError("ops must be an instance of a pyfuse.lowlevel.Operations subclass")
        super().__init__(ops, mountpoint, **kwargs)
        #: Whether handlers get names as the kernel's bytes (not decoded to str):
        #: pyfuse.compat's llfuse and pyfuse3 faces, whose filesystems take bytes. Set before
        #: :meth:`mount`; an instance attribute, read on every named request.
        self._bytes_names = False
        self._entry_timeout = float(self.config.entry_timeout)
        self._attr_timeout = float(self.config.attr_timeout)
        self._bridge = Bridge(self)
        self._unmounted: Any = None  # serving()'s signal of the loop's end
        self._listings = Listings(self._fail, _same)
        self._listings.defer = self._defer_listing
        self._listings.spawn = self._bridge.spawn
        names = implemented(ops)
        self._opmask = 0
        for name, bit in OPS.items():
            meth = getattr(ops, name) if name in names else None
            if name not in _NO_METHOD:
                setattr(self, "_op_" + name, meth)
            if meth is not None:
                self._opmask |= 1 << bit
        self._start_stats(OPS, self._listings)
        stats = self._stats
        if stats is not None:
            self._bridge.recorder = lambda p, err, done: stats.record_async(
                p.op, p.t_arrived, p.t_started, done, err)
        # an async write gets a copy of the data (libfuse's buffer is reused after the call)
        self._wdata = _copy if inspect.iscoroutinefunction(ops.write) else _view

    # -- public ----------------------------------------------------------------------------
    def lookups(self, ino: int) -> int:
        """How many lookups of ``ino`` the kernel holds, as pyfuse counted them (0: the
        kernel does not know the inode)."""
        if self._c == ffi.NULL:
            return 0
        return int(lib.pyfuse_ll_lookups(self._c, ino))

    def lookups_held(self) -> tuple[int, int]:
        """``(inodes, lookups)``: how many inodes the kernel holds lookups of, and how many
        lookups in all (``(0, 0)`` once it has forgotten everything but the root, e.g. after
        ``echo 2 > /proc/sys/vm/drop_caches``)."""
        if self._c == ffi.NULL:
            return 0, 0
        n = ffi.new("uint64_t *")
        total = lib.pyfuse_ll_lookups_held(self._c, n)
        return int(n[0]), int(total)

    @property
    def forget_requests(self) -> int:
        """How many FORGET and BATCH_FORGET requests the kernel sent (a batch is one request,
        and one call of :meth:`Operations.forget` per inode in it), counted in C."""
        if self._c == ffi.NULL:
            return 0
        return int(lib.pyfuse_ll_forget_requests(self._c))

    @property
    def event_loop(self) -> asyncio.AbstractEventLoop:
        """The asyncio event loop that runs the async handlers: pyfuse's own (started on first
        use; schedule work of your own there with ``asyncio.run_coroutine_threadsafe``), or
        the caller's under :func:`serving`. RuntimeError under trio."""
        return self._bridge.loop

    async def unmounted(self) -> None:
        """Under :func:`serving`: wait until the filesystem is unmounted and the loop has
        ended (cancelling the wait leaves the mount alone)."""
        if self._unmounted is None:
            raise RuntimeError("Session.unmounted() is for sessions served with "
                               "pyfuse.lowlevel.serving()")
        await self._unmounted.wait()

    def invalidate_inode(self, ino: int, offset: int = 0, length: int = 0) -> None:
        """Drop the kernel's cached attributes of ``ino`` and its cached data from ``offset``
        for ``length`` bytes (0: to the end; a negative offset: attributes only).
        Notifications are safe from any thread; sent from inside a handler (or an async
        handler's coroutine) they go out once the handler has let go, from pyfuse's notifier
        thread, since libfuse's would wait for the very request they are sent from. Raises
        RuntimeError once the session has ended, OSError if the kernel refuses it; an inode
        the kernel does not cache is not an error."""
        self._notify(f"invalidate_inode(ino={ino})", lib.pyfuse_notify_inval_inode, ino,
                     offset, length)

    def invalidate_entry(self, parent: int, name: str) -> None:
        """Drop the kernel's cached name ``name`` in directory ``parent`` (and its negative
        entry): the next access looks it up again. Safe as :meth:`invalidate_inode` says."""
        raw = os.fsencode(name)
        self._notify(f"invalidate_entry(parent={parent}, name={name!r})",
                     lib.pyfuse_notify_inval_entry, parent, raw, len(raw))

    def notify_delete(self, parent: int, ino: int, name: str) -> None:
        """``name`` in ``parent``, naming inode ``ino``, was removed behind the kernel's back:
        drop it (and, for a directory, what the kernel caches of it). Safe as
        :meth:`invalidate_inode` says."""
        raw = os.fsencode(name)
        self._notify(f"notify_delete(parent={parent}, ino={ino}, name={name!r})",
                     lib.pyfuse_notify_delete, parent, ino, raw, len(raw))

    def notify_store(self, ino: int, offset: int, data: bytes) -> None:
        """Put ``data`` into the kernel's page cache of ``ino`` at ``offset`` (the file grows
        to cover it). Safe as :meth:`invalidate_inode` says."""
        data = bytes(data)
        self._notify(f"notify_store(ino={ino}, offset={offset}, {len(data)} bytes)",
                     lib.pyfuse_notify_store, ino, offset, data, len(data))

    # -- the base's hooks ------------------------------------------------------------------
    def _new_c(self, argc: int, argv: Any) -> Any:
        return lib.pyfuse_new(self._handle, argc, argv, self._opmask,
                              config_to_c(self.config, self._dup_names),
                              self._stats_c(), 1)

    def _where(self, op: str, where: Any) -> str:
        if isinstance(where, tuple):
            parent, name = where
            if isinstance(name, bytes):  # bytes names: pyfuse.compat's llfuse and pyfuse3
                name = os.fsdecode(name)
            elif not isinstance(name, str):  # a C string
                name = _decode(name)
            return f"{op} {name!r} in inode {parent}"
        return f"{op} of inode {where}"

    def _ended(self) -> None:
        self._listings.close_all()
        self._bridge.close()

    def _freed(self) -> None:
        self._bridge.stop_loop()

    def _in_handler(self) -> bool:
        return bool(lib.pyfuse_in_request()) or threading.get_ident() == self._bridge.thread_id

    # -- used by the callbacks -------------------------------------------------------------
    def _refused(self, exc: Refused, op: str, where: Any) -> None:
        log.error("%s: %s", self._where(op, where), exc)

    def _defer(self, coro: Any, req: Any, reply: Any, fail: Any, op: str, where: Any,
               extra: tuple[Any, ...]) -> int:
        """Leave ``req`` to the coroutine a handler returned: replied when it finishes."""
        return self._bridge.submit(coro, req, lambda r: reply(self, req, r, *extra),
                                   lambda err: fail(req, err, *extra), op, where)

    def _defer_listing(self, coro: Any, ino: int, resume: Any, fill: Any) -> int:
        def done(items: Any) -> None:
            res = resume(items)
            if res == 0:
                lib.pyfuse_ll_reply_dir(fill)
            elif res < 0:
                lib.pyfuse_ll_fail_dir(fill, -res)

        self._bridge.submit(coro, lib.pyfuse_ll_fill_req(fill), done,
                            lambda err: lib.pyfuse_ll_fail_dir(fill, err), "readdir", ino)
        return PENDING


def lookups(ino: int) -> int:
    """Inside a handler (sync or async, forget included): how many lookups of ``ino`` the
    kernel holds on the session serving the request, as pyfuse counted them; 0 means the
    kernel has forgotten the inode (a file without names can then be freed). In forget, the
    count has already been lowered by that forget. Raises RuntimeError outside a handler
    (use :meth:`Session.lookups` there)."""
    p = CURRENT.get()
    n = lib.pyfuse_ll_req_lookups(0 if p is None else p.req, ino)
    if n == _NONE:
        raise RuntimeError("pyfuse.lowlevel.lookups() called outside a filesystem request")
    return int(n)


_NONE = (1 << 64) - 1


def _view(buf: Any, size: int) -> memoryview:
    return memoryview(ffi.buffer(buf, size)).toreadonly()


def _copy(buf: Any, size: int) -> bytes:
    return ffi.buffer(buf, size)[:]


def run(ops: Operations, mountpoint: str, foreground: bool = True, **kwargs: Any) -> None:
    """Mount ``ops`` at ``mountpoint`` and serve until it is unmounted (or, from the main
    thread, SIGINT/SIGTERM/SIGHUP arrives); then unmount and return. The keyword arguments
    are :func:`pyfuse.run`'s (``threads``, ``sticky``, ``debug``, ``ro``, ``allow_other``,
    ``default_permissions``, ``fsname``, ``subtype``, ``options``, ``config``,
    ``max_threads``, ``clone_fd``, ``signals``, ``stack``, ``stats``), and ``foreground=False``
    daemonizes as it does. ``Config``'s timeouts are the defaults of each Entry's."""
    serve(Session(ops, mountpoint, **kwargs), foreground)


class mount(Mounted[Session]):  # noqa: N801  (used as a function)
    """``with pyfuse.lowlevel.mount(ops, mountpoint, **kwargs) as session:`` mounts, serves on
    a background thread and unmounts on exit (as :class:`pyfuse.mount`)."""

    def __init__(self, ops: Operations, mountpoint: str, **kwargs: Any) -> None:
        kwargs.setdefault("signals", False)
        super().__init__(Session(ops, mountpoint, **kwargs))

