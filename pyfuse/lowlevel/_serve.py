"""Serving inside the caller's own event loop: ``await pyfuse.lowlevel.serve(...)`` and
``async with pyfuse.lowlevel.serving(...) as session``, under asyncio or trio.

By default the kernel's requests are read by libfuse's loop on threads of its own;
synchronous handlers run there, as with ``ll.run``. Every ``async def`` handler runs as a task
on the caller's loop (asyncio) or in a nursery of the caller's run (trio), so loop-bound
objects (an aiohttp session, a database pool, trio channels) can be made and used there as in
any other coroutine. With ``on_loop=True`` the loop itself reads /dev/fuse (non-blocking, when
the descriptor is readable, as pyfuse3 does under trio): no thread and no hand-off between
threads, every handler on the loop (synchronous ones included).
"""
from __future__ import annotations

import asyncio
import errno
import os
import threading
from types import TracebackType
from typing import Any, Callable, Optional

from .._pyfuse_c import ffi, lib
from ._loops import AsyncioLoop, TrioLoop
from .operations import Operations
from .session import Session

__all__ = ["serve", "serving"]


def _trio() -> Any:
    """The trio module if this coroutine runs under trio, else None."""
    import sys

    trio = sys.modules.get("trio")
    if trio is None:
        return None
    try:
        trio.lowlevel.current_trio_token()
    except RuntimeError:
        return None
    return trio


class _Signal:
    """A one-shot flag set from any thread and awaited on the caller's loop."""

    def __init__(self, trio: Any) -> None:
        self._trio = trio
        if trio is None:
            self._loop = asyncio.get_running_loop()
            self._fut: asyncio.Future[None] = self._loop.create_future()
        else:
            self._token = trio.lowlevel.current_trio_token()
            self._event = trio.Event()

    def set(self) -> None:
        """From any thread (a no-op once the loop is gone)."""
        try:
            if self._trio is None:
                self._loop.call_soon_threadsafe(self._set)
            else:
                self._token.run_sync_soon(self._event.set)
        except Exception:  # the loop is closed / the run has finished
            pass

    def _set(self) -> None:
        if not self._fut.done():
            self._fut.set_result(None)

    def is_set(self) -> bool:
        return self._fut.done() if self._trio is None else bool(self._event.is_set())

    async def wait(self) -> None:
        if self._trio is None:
            await asyncio.shield(self._fut)
        else:
            await self._event.wait()

    async def wait_shielded(self) -> None:
        """Wait even if the waiting task is cancelled meanwhile (the cancellation is then
        re-raised once the flag is set)."""
        if self._trio is not None:
            with self._trio.CancelScope(shield=True):
                await self._event.wait()
            return
        cancelled = False
        while not self._fut.done():
            try:
                await asyncio.shield(self._fut)
            except asyncio.CancelledError:
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError


class serving:  # noqa: N801  (used as a function)
    """``async with pyfuse.lowlevel.serving(ops, mountpoint, **kwargs) as session:`` mounts
    ``ops`` and serves its ``async def`` handlers on the running event loop (asyncio, or
    trio: the requests' tasks run in a nursery of this context), while libfuse's threads read
    the requests. Inside, the mount is live and ``session`` sends notifications
    (``session.invalidate_inode(...)``); ``await session.unmounted()`` waits until it is
    unmounted (``fusermount3 -u``, or :meth:`Session.stop`). Leaving the block (an exception
    or a cancellation included) unmounts, answers every pending request (EINTR for those
    still running, whose tasks are cancelled) and waits for libfuse's loop to end.

    ``on_loop=True``: the loop reads the requests itself (see the module docstring), with
    no thread: the fastest way when every handler that waits is ``async def``, since a
    synchronous handler then blocks the loop while it runs (as in pyfuse3, which serves this
    way). ``init`` is served on a thread while the loop waits (an async ``init`` runs on the
    loop meanwhile), ``destroy`` likewise at the end. ``max_tasks`` (with ``on_loop`` only):
    the most ``async def`` requests in progress at once; while that many wait, /dev/fuse is
    not read, so the next request waits for one to end (pyfuse3's ``main(max_tasks=...)``;
    1 serves one request at a time). None: no limit.

    The other keyword arguments are :func:`pyfuse.lowlevel.run`'s; ``signals`` defaults to
    False (the event loop owns them: asyncio.run turns Ctrl-C into a cancellation, which
    unmounts). Never touch the mount with blocking calls from the loop that serves it (an
    async handler would wait for the very thread that waits for it): use
    ``asyncio.to_thread`` or ``trio.to_thread.run_sync``, or another process."""

    def __init__(self, ops: Operations, mountpoint: str, *, on_loop: bool = False,
                 max_tasks: Optional[int] = None, **kwargs: Any) -> None:
        kwargs.setdefault("signals", False)
        if kwargs.pop("foreground", True) is not True:
            raise ValueError("serving() runs in the caller's process: foreground=False "
                             "(daemonizing) is for run()")
        self._init(on_loop, max_tasks)
        self.session = Session(ops, mountpoint, **kwargs)

    @classmethod
    def of(cls, session: Session, *, on_loop: bool = False,
           max_tasks: Optional[int] = None) -> serving:
        """Serve ``session``, already made (and maybe mounted already: then it is not
        mounted again), as :class:`serving` serves its own."""
        self = cls.__new__(cls)
        self._init(on_loop, max_tasks)
        self.session = session
        return self

    def _init(self, on_loop: bool, max_tasks: Optional[int]) -> None:
        if max_tasks is not None:
            if not on_loop:
                raise ValueError("serving(max_tasks=...) limits the requests the event loop "
                                 "reads itself: it needs on_loop=True")
            if type(max_tasks) is not int or max_tasks < 1:
                raise ValueError(f"serving(max_tasks={max_tasks!r}): the most requests in "
                                 "progress at once, an int >= 1 (None: no limit)")
        self._max_tasks = max_tasks
        self._on_loop = bool(on_loop)
        self._thread: Optional[threading.Thread] = None
        self._error: Optional[BaseException] = None
        self._nursery_cm: Any = None
        self._reader: Optional[_LoopReader] = None

    def _serve(self, ready: _Signal, done: _Signal) -> None:
        s = self.session
        try:
            try:
                if s._c == ffi.NULL:
                    s.mount()
            except BaseException as e:
                self._error = e
                return
            finally:
                ready.set()
            s.loop()
        except BaseException as e:
            self._error = e
        finally:
            done.set()

    async def __aenter__(self) -> Session:
        trio = _trio()
        if trio is None:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                raise RuntimeError("pyfuse.lowlevel.serving() must be entered inside a running "
                                   "asyncio event loop or trio run") from None
            impl: Any = AsyncioLoop.running()
        else:
            self._nursery_cm = trio.open_nursery()
            impl = TrioLoop(await self._nursery_cm.__aenter__())
        self.session._bridge.attach(impl)
        ready, self._done = _Signal(trio), _Signal(trio)
        self.session._unmounted = self._done
        self._trio_mod = trio
        if self._on_loop:
            await self._start_on_loop(impl)
            return self.session
        self._thread = threading.Thread(target=self._serve, args=(ready, self._done),
                                        name="pyfuse-loop", daemon=True)
        self._thread.start()
        try:
            await ready.wait_shielded()
        except BaseException:
            await self._end()
            raise
        if self._error is not None:
            await self._end()
            raise self._error
        return self.session

    async def _start_on_loop(self, impl: Any) -> None:
        """Mount (if not mounted yet) and serve INIT on a thread, then read the requests on
        this loop."""
        s, trio = self.session, self._trio_mod

        def first() -> int:
            if s._c == ffi.NULL:
                s.mount()
            # INIT, the first request: on this thread, so that an async init can run on the
            # loop meanwhile (the descriptor is still blocking: this waits for it)
            return int(lib.pyfuse_pump(s._c, 1))

        try:
            rc = await _in_thread(trio, first)
        except BaseException:  # the mount failed, or a cancellation came meanwhile
            if s._c != ffi.NULL:
                await _in_thread(trio, s._teardown)
            self._done.set()
            await self._end()
            raise
        self._reader = _LoopReader(self, trio, impl)
        self._reader.start(rc)

    async def _end(self) -> None:
        """Unmount (from a thread: it may block) and wait for the loop's end, shielded from
        cancellation (a cancellation that came meanwhile is re-raised at the end)."""
        cancelled: Optional[BaseException] = None
        if not self._done.is_set():
            try:
                await _in_thread(self._trio_mod, self.session.stop)
            except BaseException as e:
                cancelled = e
            if self._reader is not None:
                self._reader.unpause()
        try:
            await self._done.wait_shielded()
        except BaseException as e:
            cancelled = cancelled or e
        finally:
            if self._nursery_cm is not None:
                cm, self._nursery_cm = self._nursery_cm, None
                await cm.__aexit__(None, None, None)
        if cancelled is not None:
            raise cancelled

    async def __aexit__(self, et: Optional[type], ev: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        await self._end()
        if self._error is not None and ev is None:
            raise self._error


class _LoopReader:
    """``serving(on_loop=True)``'s reading of /dev/fuse on the event loop (the descriptor made
    non-blocking); ``lib.pyfuse_pump`` serves the requests waiting there (their synchronous
    handlers run, their coroutines are handed over). Once the kernel has ended the session,
    it is torn down on a thread and the serving context's end is signalled.

    asyncio: a reader callback serves up to :attr:`BURST` requests a wake-up, each coroutine
    as a task of its own (started eagerly where asyncio can). trio, whose tasks cost more:
    pyfuse3's way, worker tasks that take turns reading, and no task per request. A request's
    coroutine takes its first step where the shim hands it over, inside the reading worker
    (most end there, answered); one that suspends is carried on by that worker while another
    reads (a worker that finds another reading waits, idle, until a suspended request needs
    a new reader; beyond :attr:`IDLE` idle ones it ends).

    With ``max_tasks``, while that many coroutines are in progress nobody reads: asyncio
    stops watching the descriptor until a task ends; under trio no idle worker takes over
    reading, and the worker whose request ends reads next (pyfuse3's worker tasks, at most
    max_tasks of them)."""

    #: asyncio: requests served per wake-up at most, before the loop runs what they started.
    BURST = 32
    #: trio: idle workers kept (a suspended request wakes one to read, instead of a new task).
    IDLE = 32

    def __init__(self, owner: serving, trio: Any, impl: Any) -> None:
        self._owner, self._trio, self._impl = owner, trio, impl
        self._c = owner.session._c
        self._fd = int(lib.pyfuse_session_fd(self._c))
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._ending: Any = None  # the asyncio task of the end, kept referenced
        self._nursery: Any = getattr(impl, "_nursery", None)
        self._claimed: list[Any] = []  # trio: the request the last pump handed over
        self._reading = False  # trio: a worker waits to read
        # trio: the idle workers
        self._idle: Any = None if trio is None else trio.lowlevel.ParkingLot()
        self._ended = False
        self._max: Optional[int] = owner._max_tasks
        self._busy = 0  # coroutines in progress (counted with max_tasks only)
        self._paused = False  # asyncio: not watching the descriptor (max_tasks reached)

    def start(self, first: int) -> None:
        """Serve on the loop (``first``: what serving INIT returned)."""
        bridge = self._owner.session._bridge
        if first < 0:
            self._end_soon(first)
            return
        os.set_blocking(self._fd, False)
        if self._trio is None:
            impl = self._impl
            if self._max is None:
                bridge.direct = lambda p: bridge.start(impl, p)
            else:
                bridge.direct = self._start_counted
            self._loop = asyncio.get_running_loop()
            self._loop.add_reader(self._fd, self._readable)
        else:
            bridge.direct, bridge.step_first = self._claim, True
            self._nursery.start_soon(self._worker)

    def _readable(self) -> None:
        n = self.BURST if self._max is None else min(self.BURST, self._max - self._busy)
        if n <= 0:  # at the limit: a task's end watches the descriptor again
            assert self._loop is not None
            self._loop.remove_reader(self._fd)
            self._paused = True
            return
        rc = lib.pyfuse_pump(self._c, n)
        if rc < 0:
            assert self._loop is not None
            self._loop.remove_reader(self._fd)
            self._end_soon(rc)

    def _start_counted(self, p: Any) -> None:
        """asyncio with ``max_tasks``: start ``p``'s task, counted until it ends; at the
        limit, stop reading."""
        bridge = self._owner.session._bridge
        bridge.start(self._impl, p)
        task = p.task
        if task is None or task.done():
            return  # answered already (interrupted, or ended in its eager first step)
        self._busy += 1
        task.add_done_callback(self._task_ended)
        if self._max is not None and self._busy >= self._max and not self._paused:
            assert self._loop is not None
            self._loop.remove_reader(self._fd)
            self._paused = True

    def unpause(self) -> None:
        """The session is being stopped: read again whatever ``max_tasks`` says, to see its
        end (else a limit reached by requests that never end would keep it unseen)."""
        self._max = None
        if self._ended:
            return
        if self._trio is None:
            if self._paused:
                assert self._loop is not None
                self._paused = False
                self._loop.add_reader(self._fd, self._readable)
        elif not self._reading:
            if self._idle:
                self._idle.unpark()
            else:
                self._nursery.start_soon(self._worker)

    def _task_ended(self, _task: Any) -> None:
        self._busy -= 1
        if self._paused and not self._ended:
            assert self._loop is not None
            self._paused = False
            self._loop.add_reader(self._fd, self._readable)

    def _end_soon(self, rc: int) -> None:
        self._ended = True
        if self._trio is None:
            self._ending = asyncio.get_running_loop().create_task(self._finish(rc))
        else:
            self._idle.unpark_all()  # they end
            self._nursery.start_soon(self._finish, rc)

    def _claim(self, p: Any) -> None:
        """trio: the first step of ``p``'s coroutine (run in the pump of the reading worker)
        suspended: that worker goes on with it, another (an idle one, else a new one) reads
        meanwhile."""
        self._claimed.append(p)
        self._busy += 1
        if not self._reading and not self._ended and (self._max is None
                                                      or self._busy < self._max):
            if self._idle:
                self._idle.unpark()
            else:
                self._nursery.start_soon(self._worker)

    async def _worker(self) -> None:
        trio, c, fd, claimed = self._trio, self._c, self._fd, self._claimed
        wait_readable, pump = trio.lowlevel.wait_readable, lib.pyfuse_pump
        # Shielded: the requests are read until the kernel ends the session (leaving the
        # serving block unmounts first), whatever cancels the tasks around. The request being
        # run is cancelled (an interrupt) through the inner scope, which is then replaced;
        # p.scope is set only while p runs, so a late cancel(p) reaches no other request.
        with trio.CancelScope(shield=True):
            while not self._ended:
                with trio.CancelScope() as scope:
                    while not self._ended:
                        if self._reading:  # another reads: idle until needed (IDLE at most)
                            if len(self._idle) >= self.IDLE:
                                return
                            await self._idle.park()
                            continue
                        self._reading = True
                        try:
                            await wait_readable(fd)
                        finally:
                            self._reading = False
                        if self._ended:
                            break
                        rc = pump(c, 1)  # one a wake-up (another read would mostly
                        if rc < 0:       # find nothing: the client waits for this reply)
                            trio.lowlevel.notify_closing(fd)
                            self._end_soon(rc)
                            break
                        while claimed:
                            p = claimed.pop()
                            p.scope = scope
                            try:
                                if p.interrupted:
                                    scope.cancel()
                                await p.run(resume=True)
                            finally:
                                p.scope = None
                                p.done()
                                self._busy -= 1

    async def _finish(self, rc: int) -> None:
        """The session has ended (``rc``, pyfuse_pump's -errno): tear it down on a thread
        (unmount, answer what is pending, free; ``destroy`` runs meanwhile), then signal
        the serving context."""
        owner, s = self._owner, self._owner.session
        try:
            await _in_thread(self._trio, s._teardown)
        except BaseException as e:
            owner._error = owner._error or e
        if s._fatal is not None:
            owner._error = owner._error or s._fatal
        elif rc != -errno.ENODEV:
            owner._error = owner._error or OSError(
                -rc, f"reading the requests of {s.mountpoint} failed: {os.strerror(-rc)}")
        owner._done.set()


async def _in_thread(trio: Any, fn: Callable[[], Any]) -> Any:
    """``fn()`` on a worker thread, shielded from cancellation (an unmount is not undone)."""
    if trio is not None:
        with trio.CancelScope(shield=True):
            return await trio.to_thread.run_sync(fn)
    fut = asyncio.get_running_loop().run_in_executor(None, fn)
    cancelled = False
    while not fut.done():
        try:
            await asyncio.shield(fut)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return fut.result()


async def serve(ops: Operations, mountpoint: str, **kwargs: Any) -> None:
    """Mount ``ops`` at ``mountpoint`` and serve it inside the running event loop (asyncio or
    trio) until it is unmounted; cancelling the call unmounts cleanly. The keyword arguments
    are :func:`pyfuse.lowlevel.run`'s. To reach the session (notifications) use
    :class:`serving`."""
    async with serving(ops, mountpoint, **kwargs) as session:
        await session.unmounted()
