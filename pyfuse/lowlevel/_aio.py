"""Replies that wait: the asyncio event loop on which the inode API's ``async def`` handlers
run, one thread for all of them.

A request whose handler returned a coroutine is handed over (:meth:`Bridge.submit`) by the
loop thread that received it, which then goes back to reading requests; the coroutine runs as
a task on the event loop, and its reply is sent from there when it finishes. The shim is asked
to report the request's INTERRUPT (``pyfuse_ll_watch``): the task is then cancelled and the
caller gets EINTR. The event loop starts with the first coroutine (or with ``Session.loop``)
and ends with the session, after every pending request has been answered.
"""
from __future__ import annotations

import asyncio
import collections
import errno
import itertools
import logging
import threading
import types
from typing import Any, Callable, Coroutine, Optional

from .._core.context import CURRENT, request_context
from .._pyfuse_c import lib
from ..types import Context
from ._replies import Refused

__all__ = ["Bridge"]

log = logging.getLogger("pyfuse")
_Coro = types.CoroutineType


class _Pending:
    """One request whose coroutine is running: what the task needs to reply, and what
    ``pyfuse.context()`` answers inside it."""

    __slots__ = ("key", "req", "coro", "on_result", "on_error", "op", "where", "task",
                 "interrupted", "_ctx")

    def __init__(self, key: int, req: Any, coro: Any, on_result: Callable[[Any], None],
                 on_error: Callable[[int], None], op: str, where: Any) -> None:
        self.key, self.req, self.coro = key, req, coro
        self.on_result, self.on_error, self.op, self.where = on_result, on_error, op, where
        self.task: Optional[asyncio.Task[None]] = None
        self.interrupted = False
        self._ctx: Optional[Context] = None

    @property
    def ctx(self) -> Context:
        if self._ctx is None:
            self._ctx = request_context(self.req)
        return self._ctx


class Bridge:
    """The event loop of one session (see the module docstring)."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()
        self._pending: dict[int, _Pending] = {}
        self._keys = itertools.count(1)
        self._closed = False
        # requests handed over but not yet started: the event loop is woken once for a burst
        # of them (one write to its self-pipe), not once for each
        self._arrived: collections.deque[_Pending] = collections.deque()
        self._woken = False
        #: threading.get_ident() of the event loop's thread, once started.
        self.thread_id: Optional[int] = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop (started on first use)."""
        loop = self._loop
        if loop is None or self._closed:
            with self._lock:
                if self._closed:
                    raise RuntimeError(f"the session of {self._session.mountpoint} has ended")
                if self._loop is None:
                    self._start()
                loop = self._loop
        assert loop is not None
        return loop

    def _start(self) -> None:
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            self.thread_id = threading.get_ident()
            loop.call_soon(ready.set)
            loop.run_forever()

        self._thread = threading.Thread(target=run, name="pyfuse-async", daemon=True)
        self._thread.start()
        ready.wait()
        self._loop = loop

    # -- requests --------------------------------------------------------------------------
    def submit(self, coro: Any, req: Any, on_result: Callable[[Any], None],
               on_error: Callable[[int], None], op: str, where: Any) -> int:
        """Run ``coro`` for request ``req``: ``on_result(value)`` replies, ``on_error(errno)``
        answers an error. Returns 0 (the request is pending)."""
        try:
            loop = self.loop
        except RuntimeError:
            coro.close()
            on_error(errno.EINTR)
            return 0
        p = _Pending(next(self._keys), req, coro, on_result, on_error, op, where)
        self._pending[p.key] = p
        lib.pyfuse_ll_watch(req, p.key)  # an INTERRUPT already received is reported at once
        self._arrived.append(p)
        if not self._woken:
            self._woken = True
            loop.call_soon_threadsafe(self._begin)
        return 0

    def _begin(self) -> None:
        """Start the tasks of the requests handed over since the last wake-up."""
        self._woken = False  # before draining: a request appended from now on wakes again
        arrived, create = self._arrived, self.loop.create_task
        while arrived:
            p = arrived.popleft()
            p.task = create(self._run(p))
            if p.interrupted:
                p.task.cancel()

    async def _run(self, p: _Pending) -> None:
        CURRENT.set(p)
        s = self._session
        try:
            try:
                r = await p.coro
            except asyncio.CancelledError:
                p.on_error(errno.EINTR)
                return
            except BaseException as e:
                p.on_error(-s._fail(e, p.op, p.where))
                return
            try:
                p.on_result(r)
            except Refused as e:
                s._refused(e, p.op, p.where)
            except BaseException as e:
                p.on_error(-s._fail(e, p.op, p.where))
        finally:
            self._pending.pop(p.key, None)

    def interrupt(self, key: int) -> None:
        """The kernel interrupted request ``key`` (called by the shim, on a loop thread)."""
        p = self._pending.get(key)
        if p is None:
            return
        p.interrupted = True
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._cancel, p)

    @staticmethod
    def _cancel(p: _Pending) -> None:
        if p.task is not None:
            p.task.cancel()

    # -- coroutines without a request ------------------------------------------------------
    def spawn(self, coro: Coroutine[Any, Any, Any], what: str) -> None:
        """Run ``coro`` (a forget) without a reply; an exception is logged."""
        async def run() -> None:
            try:
                await coro
            except Exception:
                log.exception("%s raised", what)

        try:
            self.loop.call_soon_threadsafe(self.loop.create_task, run())
        except RuntimeError:
            coro.close()

    def run_now(self, r: Any) -> Any:
        """``r``, or if it is a coroutine (init, destroy), its result, run on the event loop
        while this thread waits."""
        if r.__class__ is not _Coro:
            return r
        return asyncio.run_coroutine_threadsafe(r, self.loop).result()

    # -- the end ---------------------------------------------------------------------------
    def close(self) -> None:
        """The session has ended (no request will come): cancel what is pending (each is
        answered EINTR, to a kernel that no longer listens) and the filesystem's own tasks,
        then stop the event loop."""
        with self._lock:
            self._closed = True
            loop = self._loop
        if loop is None:
            return

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(cancel_all(), loop).result(10)
        except Exception:
            log.exception("cancelling the pending async handlers failed")
        loop.call_soon_threadsafe(loop.stop)
        assert self._thread is not None
        self._thread.join(10)
        if not self._thread.is_alive():
            loop.close()
