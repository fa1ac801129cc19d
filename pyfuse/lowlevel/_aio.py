"""Replies that wait: the requests of the inode API whose ``async def`` handlers run on an
event loop, and the one object that owns each one's reply.

A request whose handler returned a coroutine is handed over (:meth:`Bridge.submit`) by the
loop thread that received it, which then goes back to reading requests. From then on a
:class:`Request` owns its reply: :meth:`Request.answer` is the only way a reply goes out, and
it sends one at most, whoever calls it first (the task when the coroutine ends, the task's
done-callback when it ended without answering, e.g. cancelled before its first step, the
interrupt of a request that never started, or the session's end, which answers everything
still pending with EINTR before libfuse's session is freed). Nothing else replies, so no
path can drop a request and none can answer twice.

The event loop is one of (:mod:`._loops`): pyfuse's own asyncio loop in a thread of its own
(started with the first coroutine; ``ll.run``/``ll.mount``), or the caller's running loop,
asyncio or trio (``await ll.serve(...)``/``async with ll.serving(...)``). When that loop reads
the requests itself (``serving(on_loop=True)``), a request is submitted on the loop's own
thread and handed straight on (:attr:`Bridge.direct`); under trio its coroutine's first step
runs right there (:meth:`Request.step`), and only one that suspends becomes pending. The
shim is asked to report a pending request's INTERRUPT (``pyfuse_ll_watch``): its task (or
cancel scope) is then cancelled and the caller gets EINTR.
"""
from __future__ import annotations

import collections
import contextvars
import errno
import itertools
import logging
import sys
import threading
import time
import types
from typing import Any, Callable, Coroutine, Optional

from .._core.context import CURRENT, request_context
from .._pyfuse_c import lib
from ..types import Context
from ._loops import AsyncioLoop, EventLoop
from ._replies import Refused

__all__ = ["Bridge", "Request"]

log = logging.getLogger("pyfuse")
_Coro = types.CoroutineType
_EINTR = errno.EINTR
_now = time.perf_counter_ns
_get_ident = threading.get_ident
_refs = sys.getrefcount


def _unheld() -> int:
    """What ``sys.getrefcount`` says of an object only a local variable holds (also the
    llfuse adapter's test of a kept RequestContext)."""
    o = object()
    return sys.getrefcount(o)


_UNHELD = _unheld()


class Request:
    """One request whose reply waits on a coroutine: the only sender of its reply, and what
    ``pyfuse.context()`` answers inside it."""

    __slots__ = ("bridge", "key", "req", "coro", "on_result", "on_error", "op", "where",
                 "task", "scope", "interrupted", "answered", "started", "_ctx", "t_arrived",
                 "t_started", "_context", "_yielded", "ctx_view")

    def __init__(self, bridge: Bridge, key: int, req: Any, coro: Any,
                 on_result: Callable[[Any], None], on_error: Callable[[int], None], op: str,
                 where: Any) -> None:
        self.bridge, self.key, self.req, self.coro = bridge, key, req, coro
        self.on_result, self.on_error, self.op, self.where = on_result, on_error, op, where
        self.task: Any = None       # the asyncio task running it
        self.scope: Any = None      # or trio's cancel scope around it
        self.interrupted = False
        self.answered = False
        self.started = False
        self._ctx: Optional[Context] = None
        #: An object that reads :attr:`ctx` when it is first read (pyfuse.compat's lazy
        #: RequestContext): if anything but this attribute still holds it when the request is
        #: answered, ctx is fetched before the reply frees the request. Cleared then.
        self.ctx_view: Any = None
        # timestamps only for the statistics (recorder set): none on the plain path
        self.t_arrived = _now() if bridge.recorder is not None else 0
        self.t_started = 0

    @property
    def ctx(self) -> Context:
        if self._ctx is None:
            self._ctx = request_context(self.req)
        return self._ctx

    def answer(self, result: Any = None, exc: Optional[BaseException] = None,
               err: int = 0) -> bool:
        """Send this request's one reply: ``err`` (an errno) if given, else the errno of the
        policy for ``exc`` if given, else ``result`` converted (a conversion error becomes the
        errno of the policy). Returns False, sending nothing, if it was answered already."""
        b = self.bridge
        t_done = _now() if self.t_arrived else 0
        with b._lock:
            if self.answered:
                return False
            self.answered = True
            b._answering += 1
        try:
            view = self.ctx_view
            if view is not None:
                self.ctx_view = None  # (it refers to this request: no cycle left behind)
                if self._ctx is None and _refs(view) > _UNHELD:
                    self.ctx  # noqa: B018 (kept: fetched while the request is alive)
            b._pending.pop(self.key, None)
            if not self.started and self.coro is not None:
                try:
                    self.coro.close()  # never ran: no "coroutine was never awaited" warning
                except (ValueError, RuntimeError):
                    pass  # its task began meanwhile (the end's sweep): it ends on its own
            s = b._session
            if not err and exc is None:
                try:
                    self.on_result(result)
                except Refused as e:  # the shim refused the value and answered EIO itself
                    s._refused(e, self.op, self.where)
                    b._record(self, errno.EIO, t_done)
                    return True
                except BaseException as e:
                    exc = e
                else:
                    b._record(self, 0, t_done)
                    return True
            if not err:
                assert exc is not None
                err = -s._fail(exc, self.op, self.where)
            self.on_error(err)
            b._record(self, err, t_done)
            return True
        finally:
            with b._lock:
                b._answering -= 1
                if b._answering == 0 and b._closed:
                    b._idle.notify_all()  # close() may wait for it

    def step(self) -> bool:
        """Run the coroutine's first step now, in a context of its own (copied, with
        ``pyfuse.context()``'s request set, so what a handler sets there stays its own), on
        the event loop inside the task that called the shim (``serving(on_loop=True)`` under
        trio). True if it ended there, answered; else ``run(resume=True)`` goes on with it."""
        self.started = True
        if self.t_arrived:
            self.t_started = _now()
        ctx = self._context = contextvars.copy_context()
        ctx.run(CURRENT.set, self)
        try:
            self._yielded = ctx.run(self.coro.send, None)
        except StopIteration as e:
            self.answer(e.value)
            return True
        except BaseException as e:
            self._raised(e)  # a cancellation is not re-raised: this is no task of its own
            return True
        return False

    async def run(self, resume: bool = False) -> None:
        """The coroutine that serves this request on the event loop: its task's, or with
        ``resume`` the rest of what :meth:`step` began, in the task that called it."""
        try:
            if resume:
                r = await _resume(self)
            else:
                self.started = True
                if self.t_arrived:
                    self.t_started = _now()
                CURRENT.set(self)
                r = await self.coro
        except BaseException as e:
            if self._raised(e):
                raise
            return
        self.answer(r)

    def _raised(self, e: BaseException) -> bool:
        """The coroutine raised ``e``: answer its errno (EINTR for the loop's cancellation).
        True if ``e`` must propagate (trio's cancellation, out of the task's scope)."""
        impl = self.bridge.loop_impl
        assert impl is not None  # it runs on it
        if impl.is_cancel(e):
            self.answer(err=_EINTR)
            return impl.must_reraise(e)
        self.answer(exc=e)
        return False

    def done(self, _task: Any = None) -> None:
        """The task ended (its done-callback): answer EINTR if it never did (a task cancelled
        before its first step never runs :meth:`run`'s body)."""
        if not self.answered:
            self.answer(err=_EINTR)


@types.coroutine
def _resume(p: Request) -> Any:
    """The rest of ``p``'s coroutine after :meth:`Request.step`, in the calling task, each step
    in the request's own context (as its own task would run it)."""
    run, coro, y = p._context.run, p.coro, p._yielded
    p._yielded = None
    while True:
        try:
            v = yield y
        except BaseException as e:  # thrown in by the event loop (a cancellation)
            try:
                y = run(coro.throw, e)
            except StopIteration as s:
                return s.value
        else:
            try:
                y = run(coro.send, v)
            except StopIteration as s:
                return s.value


class Bridge:
    """The async requests of one session and the event loop they run on (see the module
    docstring)."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self.loop_impl: Optional[EventLoop] = None
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._answering = 0
        self._pending: dict[int, Request] = {}
        self._keys = itertools.count(1)
        self._closed = False
        # requests handed over but not yet started: the event loop is woken once for a burst
        # of them (one wake-up), not once for each
        self._arrived: collections.deque[Request] = collections.deque()
        self._woken = False
        #: The event loop reads the requests itself (``serving(on_loop=True)``): a request
        #: submitted on its thread is handed to this, at once, without a wake-up; with
        #: ``step_first``, after its first step (:meth:`Request.step`), if it did not end.
        self.direct: Optional[Callable[[Request], None]] = None
        self.step_first = False
        #: Called with (request, errno, perf_counter_ns when its coroutine ended) once an
        #: async request is answered (statistics).
        self.recorder: Optional[Callable[[Request, int, int], None]] = None

    # -- the event loop --------------------------------------------------------------------
    def attach(self, impl: EventLoop) -> None:
        """Serve on the caller's event loop (before mounting)."""
        with self._lock:
            if self.loop_impl is not None:
                raise RuntimeError("this session already has an event loop")
            self.loop_impl = impl

    @property
    def thread_id(self) -> Optional[int]:
        """threading.get_ident() of the event loop's thread, once there is one."""
        impl = self.loop_impl
        return None if impl is None else impl.thread_id

    def _impl(self, ended_ok: bool = False) -> EventLoop:
        """The event loop (pyfuse's own is started here on first use). Raises RuntimeError
        once the session has ended, unless ``ended_ok`` (destroy runs after the end)."""
        impl = self.loop_impl
        if impl is None or self._closed:
            with self._lock:
                if self._closed and not (ended_ok and self.loop_impl is not None):
                    raise RuntimeError(f"the session of {self._session.mountpoint} has ended")
                if self.loop_impl is None:
                    self.loop_impl = AsyncioLoop.own()
                impl = self.loop_impl
        return impl

    @property
    def loop(self) -> Any:
        """The asyncio event loop (pyfuse's own, started on first use, or the caller's)."""
        return self._impl().asyncio_loop()

    # -- requests --------------------------------------------------------------------------
    def submit(self, coro: Any, req: Any, on_result: Callable[[Any], None],
               on_error: Callable[[int], None], op: str, where: Any) -> int:
        """Run ``coro`` for request ``req``: ``on_result(value)`` replies, ``on_error(errno)``
        answers an error. Returns 0 (the request is pending: its Request answers it)."""
        p = Request(self, next(self._keys), req, coro, on_result, on_error, op, where)
        try:
            impl = self._impl()
        except RuntimeError:
            p.answer(err=_EINTR)
            return 0
        direct = self.direct is not None and _get_ident() == impl.thread_id
        if direct and self.step_first and p.step():
            return 0  # ended in its first step (no INTERRUPT can come before it waits)
        self._pending[p.key] = p
        lib.pyfuse_ll_watch(req, p.key)  # an INTERRUPT already received is reported at once
        if direct:
            self.direct(p)  # type: ignore[misc]
            return 0
        self._arrived.append(p)
        if not self._woken:
            self._woken = True
            if not impl.call_soon(self._begin):
                self._woken = False
                self._drain(_EINTR)  # the loop is gone: nothing will start them
        return 0

    def _begin(self) -> None:
        """Start the tasks of the requests handed over since the last wake-up (on the event
        loop)."""
        self._woken = False  # before draining: a request appended from now on wakes again
        arrived, impl = self._arrived, self.loop_impl
        assert impl is not None
        while arrived:
            p = arrived.popleft()
            if not p.answered:
                self.start(impl, p)

    @staticmethod
    def start(impl: EventLoop, p: Request) -> None:
        """Start request ``p``'s task (on the event loop); one interrupted already is answered
        EINTR instead, its coroutine closed unrun."""
        if p.interrupted:
            p.answer(err=_EINTR)
            return
        try:
            impl.start(p)
        except Exception:  # e.g. trio's nursery closed to new tasks: the session ends
            p.answer(err=_EINTR)

    def _drain(self, err: int) -> None:
        while self._arrived:
            try:
                p = self._arrived.popleft()
            except IndexError:
                return
            p.answer(err=err)

    def interrupt(self, key: int) -> None:
        """The kernel interrupted request ``key`` (called by the shim, on a loop thread)."""
        p = self._pending.get(key)
        if p is None or p.answered:
            return
        p.interrupted = True
        impl = self.loop_impl
        if impl is not None:
            impl.call_soon(impl.cancel, p)

    def _record(self, p: Request, err: int, t_done: int) -> None:
        rec = self.recorder
        if rec is not None and p.t_arrived:
            try:
                rec(p, err, t_done)
            except Exception:
                log.exception("recording the statistics of an async request failed")

    # -- coroutines without a request ------------------------------------------------------
    def spawn(self, coro: Coroutine[Any, Any, Any], what: str) -> None:
        """Run ``coro`` (a forget, the closing of an async readdir iterator) without a reply;
        an exception is logged."""
        async def run() -> None:
            try:
                await coro
            except Exception:
                log.exception("%s raised", what)

        try:
            impl = self._impl()
        except RuntimeError:
            coro.close()
            return
        runner = run()
        if not impl.call_soon(impl.spawn, runner):
            runner.close()
            coro.close()

    def run_now(self, r: Any) -> Any:
        """``r``, or if it is a coroutine (init, destroy), its result, run on the event loop
        while this thread waits."""
        if r.__class__ is not _Coro:
            return r
        try:
            impl = self._impl(ended_ok=True)
        except RuntimeError:
            r.close()
            raise
        return impl.run_now(r)

    # -- the end ---------------------------------------------------------------------------
    def close(self) -> None:
        """The session has ended (no request will come): cancel the tasks of what is pending
        and answer each request that is still open EINTR (to a kernel that no longer
        listens). Returns once no reply is being sent: libfuse's session may then be freed
        (its ``destroy`` may still run a coroutine: :meth:`run_now`)."""
        with self._lock:
            self._closed = True
            impl = self.loop_impl
        if impl is not None:
            impl.cancel_all(list(self._pending.values()))
        for p in list(self._pending.values()):
            p.answer(err=_EINTR)
        self._drain(_EINTR)
        with self._lock:
            self._idle.wait_for(lambda: self._answering == 0, timeout=10)

    def stop_loop(self) -> None:
        """After libfuse's session is freed: stop pyfuse's own event loop (which cancels the
        filesystem's own tasks on it; on the caller's loop those are the caller's)."""
        impl = self.loop_impl
        if impl is not None:
            impl.close()
