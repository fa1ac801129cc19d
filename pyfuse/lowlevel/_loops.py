"""The event loops the inode API's ``async def`` handlers can run on: pyfuse's own asyncio
loop (a thread of its own), the caller's running asyncio loop, or the caller's trio run.

Each adapter offers the same few operations to :class:`pyfuse.lowlevel._aio.Bridge`:
schedule a callable from any thread (``call_soon``), start a request's task and cancel it
(on the loop), run a coroutine to completion for a waiting thread (``run_now``: init and
destroy), run one without a reply (``spawn``), and the end (``cancel_all``, ``close``).
trio is imported only when a trio run serves a filesystem.
"""
from __future__ import annotations

import asyncio
import logging
import sys
import threading
from typing import Any, Callable, Optional

__all__ = ["EventLoop", "AsyncioLoop", "TrioLoop", "current"]

log = logging.getLogger("pyfuse")
#: asyncio can run a new task's first step at once (Python 3.12's eager tasks).
_EAGER = sys.version_info >= (3, 12)
_EAGER_START: dict[str, Any] = {"eager_start": True}


class EventLoop:
    """What the bridge needs of an event loop (see the module docstring)."""

    #: threading.get_ident() of the thread the loop runs on.
    thread_id: Optional[int] = None

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Schedule ``fn(*args)`` on the loop, from any thread; False if the loop is gone."""
        raise NotImplementedError

    def start(self, p: Any) -> None:
        """Start the task serving request ``p`` (on the loop)."""
        raise NotImplementedError

    def cancel(self, p: Any) -> None:
        """Cancel request ``p``'s task (on the loop); a task not started yet sees
        ``p.interrupted`` when it starts."""
        raise NotImplementedError

    def spawn(self, coro: Any) -> None:
        """Run ``coro`` as a task of its own (on the loop)."""
        raise NotImplementedError

    def run_now(self, coro: Any) -> Any:
        """Run ``coro`` on the loop and return its result, from another thread."""
        raise NotImplementedError

    def is_cancel(self, exc: BaseException) -> bool:
        """``exc`` is this loop's cancellation."""
        raise NotImplementedError

    def must_reraise(self, exc: BaseException) -> bool:
        """A cancellation that must propagate out of the task (trio's)."""
        return False

    def cancel_all(self, pending: list[Any]) -> None:
        """The session ended: cancel the tasks of these requests (from any thread)."""
        for p in pending:
            self.call_soon(self.cancel, p)

    def close(self) -> None:
        """After the session's end: stop a loop pyfuse owns."""

    def asyncio_loop(self) -> asyncio.AbstractEventLoop:
        raise RuntimeError("the async handlers of this session run under trio, not asyncio")


class AsyncioLoop(EventLoop):
    """An asyncio event loop: pyfuse's own (:meth:`own`) or the caller's running one."""

    def __init__(self, loop: asyncio.AbstractEventLoop, thread: Optional[threading.Thread],
                 thread_id: Optional[int]) -> None:
        self._loop = loop
        self._thread = thread  # pyfuse's own loop's thread, else None
        self.thread_id = thread_id
        self._spawned: set[asyncio.Task[Any]] = set()

    @classmethod
    def own(cls) -> AsyncioLoop:
        """A new event loop on a thread of its own (``pyfuse-async``)."""
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        ident: list[int] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            ident.append(threading.get_ident())
            loop.call_soon(ready.set)
            loop.run_forever()

        thread = threading.Thread(target=run, name="pyfuse-async", daemon=True)
        thread.start()
        ready.wait()
        return cls(loop, thread, ident[0])

    @classmethod
    def running(cls) -> AsyncioLoop:
        """The caller's running loop (called on it)."""
        return cls(asyncio.get_running_loop(), None, threading.get_ident())

    def asyncio_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> bool:
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # closed
            return False
        return True

    def start(self, p: Any) -> None:
        if _EAGER:  # its first step now: a handler that does not wait ends here
            task = asyncio.Task(p.run(), loop=self._loop, **_EAGER_START)
        else:
            task = self._loop.create_task(p.run())
        p.task = task
        task.add_done_callback(p.done)

    def cancel(self, p: Any) -> None:
        if p.task is not None:
            p.task.cancel()

    def spawn(self, coro: Any) -> None:
        task = self._loop.create_task(coro)
        self._spawned.add(task)  # keep a reference until it ends
        task.add_done_callback(self._spawned.discard)

    def run_now(self, coro: Any) -> Any:
        if self._loop.is_closed():
            coro.close()
            raise RuntimeError("the event loop serving this filesystem is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def is_cancel(self, exc: BaseException) -> bool:
        return isinstance(exc, asyncio.CancelledError)

    def close(self) -> None:
        thread, loop = self._thread, self._loop
        if thread is None:
            return  # the caller's loop: theirs to close

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(cancel_all(), loop).result(10)
        except Exception:
            log.exception("cancelling the filesystem's tasks on pyfuse's event loop failed")
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        if not thread.is_alive():
            loop.close()


class TrioLoop(EventLoop):
    """The caller's trio run: requests run as tasks of ``nursery`` (the serving context's),
    each in a cancel scope of its own, scheduled with the run's token."""

    def __init__(self, nursery: Any) -> None:
        import trio

        self._trio = trio
        self._token = trio.lowlevel.current_trio_token()
        self._nursery = nursery
        self.thread_id = threading.get_ident()

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> bool:
        try:
            self._token.run_sync_soon(fn, *args)
        except self._trio.RunFinishedError:
            return False
        return True

    def start(self, p: Any) -> None:
        self._nursery.start_soon(self._serve, p)

    async def _serve(self, p: Any) -> None:
        try:
            with self._trio.CancelScope() as scope:
                p.scope = scope
                if p.interrupted:
                    scope.cancel()
                await p.run()
        finally:
            p.done()

    def cancel(self, p: Any) -> None:
        if p.scope is not None:
            p.scope.cancel()

    def spawn(self, coro: Any) -> None:
        async def run() -> None:
            await coro

        self._nursery.start_soon(run)

    def run_now(self, coro: Any) -> Any:
        async def run() -> Any:
            return await coro

        try:
            return self._trio.from_thread.run(run, trio_token=self._token)
        except self._trio.RunFinishedError:
            coro.close()
            raise RuntimeError("the trio run serving this filesystem has finished") from None

    def is_cancel(self, exc: BaseException) -> bool:
        return isinstance(exc, self._trio.Cancelled)

    def must_reraise(self, exc: BaseException) -> bool:
        return True


def current(nursery: Any = None) -> EventLoop:
    """The adapter of the loop running this coroutine: asyncio's, or trio's (``nursery``, a
    nursery of that run, holds the requests' tasks). Raises RuntimeError outside both."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return AsyncioLoop.running()
    if nursery is not None:
        return TrioLoop(nursery)
    raise RuntimeError("pyfuse.lowlevel.serve() must be awaited inside a running asyncio "
                       "event loop or trio run")
