"""Serving inside the caller's own event loop: ``await pyfuse.lowlevel.serve(...)`` and
``async with pyfuse.lowlevel.serving(...) as session``, under asyncio or trio.

The kernel's requests are still read by libfuse's loop on threads of its own (a blocking
read of /dev/fuse has no place on an event loop); synchronous handlers run there, as with
``ll.run``. Every ``async def`` handler runs as a task on the caller's loop (asyncio) or in a
nursery of the caller's run (trio), so loop-bound objects (an aiohttp session, a database
pool, trio channels) can be made and used there as in any other coroutine.
"""
from __future__ import annotations

import asyncio
import threading
from types import TracebackType
from typing import Any, Callable, Optional

from .._pyfuse_c import ffi
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

    The keyword arguments are :func:`pyfuse.lowlevel.run`'s; ``signals`` defaults to False
    (the event loop owns them: asyncio.run turns Ctrl-C into a cancellation, which unmounts).
    Never touch the mount with blocking calls from the loop that serves it (an async handler
    would wait for the very thread that waits for it): use ``asyncio.to_thread`` or
    ``trio.to_thread.run_sync``, or another process."""

    def __init__(self, ops: Operations, mountpoint: str, **kwargs: Any) -> None:
        kwargs.setdefault("signals", False)
        if kwargs.pop("foreground", True) is not True:
            raise ValueError("serving() runs in the caller's process: foreground=False "
                             "(daemonizing) is for run()")
        self.session = Session(ops, mountpoint, **kwargs)
        self._init()

    @classmethod
    def of(cls, session: Session) -> serving:
        """Serve ``session``, already made (and maybe mounted already: then it is not
        mounted again), as :class:`serving` serves its own."""
        self = cls.__new__(cls)
        self.session = session
        self._init()
        return self

    def _init(self) -> None:
        self._thread: Optional[threading.Thread] = None
        self._error: Optional[BaseException] = None
        self._nursery_cm: Any = None

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

    async def _end(self) -> None:
        """Unmount (from a thread: it may block) and wait for the loop's end, shielded from
        cancellation (a cancellation that came meanwhile is re-raised at the end)."""
        cancelled: Optional[BaseException] = None
        if not self._done.is_set():
            try:
                await _in_thread(self._trio_mod, self.session.stop)
            except BaseException as e:
                cancelled = e
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
