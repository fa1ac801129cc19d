"""Serving with SIGINT, SIGTERM and SIGHUP handled (``run()`` in the main thread): the first
signal stops the loop once the requests in progress are answered, and says which they are
(:mod:`.inprogress`); a second one ends it at once. The shim does the signal handling
(csrc/session.c, ``pyfuse_loop_start``); this is the Python side of it, used by
:meth:`BaseSession.loop`."""
from __future__ import annotations

import errno
import logging
import os
import threading
import time
from typing import TYPE_CHECKING

from .._pyfuse_c import ffi, lib
from ..mounts import _abort_connection, fuse_device, unmount
from .inprogress import in_progress

if TYPE_CHECKING:
    from .mounting import BaseSession

__all__ = ["loop_with_signals"]

log = logging.getLogger("pyfuse")

#: How often (ms) a loop stopping after a signal says again what it waits for.
_REPORT_MS = 10_000
#: How long (ms) a loop stopping after a signal may take before it says what it waits for.
_QUIET_MS = 300
#: Sessions ended by a second signal while handlers still ran (kept alive for them).
_ABANDONED: list[BaseSession] = []


def loop_with_signals(session: BaseSession) -> int:
    """The loop, with SIGINT, SIGTERM and SIGHUP handled: the first stops it once the
    requests in progress are answered (and says which they are); a second one ends it at
    once (:func:`_end_now`; on one thread: KeyboardInterrupt in the handler running)."""
    rc = lib.pyfuse_loop_start(session._c, session._threads, session._max_threads,
                               session._clone_fd, session._sticky)
    if rc == -errno.EBUSY:
        raise RuntimeError(f"{session.mountpoint}: another pyfuse loop handles the signals of "
                           "this process (or one ended by a second signal still has a "
                           "handler running); pass signals=False")
    if rc < 0:
        raise OSError(-rc, f"starting the FUSE loop: {os.strerror(-rc)}")
    if session._threads:  # the loop has a thread of its own: wait here
        return _watch(session, here=False)
    # one thread: the loop runs on this one, as without signals; a thread watches
    watcher = threading.Thread(target=_watch, args=(session, True), name="pyfuse-signals",
                               daemon=True)
    watcher.start()
    try:
        return int(lib.pyfuse_loop_here())
    finally:
        watcher.join()
        lib.pyfuse_loop_finish()


def _watch(session: BaseSession, here: bool) -> int:
    """Wait for the loop to end, saying what it waits for after a signal; the loop's
    value, or after a second signal :func:`_end_now`'s (``here``: the loop runs on the
    caller's thread, where the second signal has raised KeyboardInterrupt: wait on)."""
    ended = ffi.new("int *")
    r = lib.pyfuse_loop_wait(2**31 - 1, 0, ended)  # until the loop ends or a signal
    if not ended[0]:  # a signal: the loop ends once the requests in progress are answered
        r = lib.pyfuse_loop_wait(_QUIET_MS, 1, ended)  # at once if none: no message
    if not ended[0] and r < 2:
        since = time.monotonic()
        _report_waiting(session, "signal received: unmounting once the requests in progress are "
                        "answered", first=True)
        while True:
            r = lib.pyfuse_loop_wait(_REPORT_MS, 1, ended)
            if ended[0] or r >= 2:
                break
            _report_waiting(session, f"still waiting after {time.monotonic() - since:.0f} s",
                            first=False)
    if here and lib.pyfuse_loop_presses() >= 2:  # the loop may have ended already: say it
        log.warning("%s: second signal: interrupting the request in progress "
                    "(KeyboardInterrupt)", session.mountpoint)
    if not ended[0] and here:
        while not ended[0]:
            r = lib.pyfuse_loop_wait(_REPORT_MS, 2**31 - 1, ended)
    if ended[0]:
        if not here:
            lib.pyfuse_loop_finish()
        return int(r)
    return _end_now(session)


def _report_waiting(session: BaseSession, what: str, first: bool) -> None:
    busy = in_progress()
    if not busy and not first:
        return
    if busy:
        detail = f"; {len(busy)} in progress: " + "; ".join(busy)
    else:
        detail = " (none is running Python code now)"
    log.warning("%s: %s%s. Another SIGINT/SIGTERM ends it now (their callers get an "
                "error).", session.mountpoint, what, detail)


def _end_now(session: BaseSession) -> int:
    """A second signal: abort the connection (every request still waiting fails at once,
    ECONNABORTED), detach the mount, and leave the handlers still running to end on the
    loop's thread; this session is never freed (its C part may still be in use)."""
    busy = in_progress()
    log.warning("%s: second signal: ending now%s", session.mountpoint,
                f"; abandoning {len(busy)} request(s) in progress: " + "; ".join(busy)
                if busy else "")
    if session.connection is not None:
        _abort_connection(session.connection)
    try:
        if fuse_device(session.mountpoint) == session.connection:
            unmount(session.mountpoint, lazy=True)
    except OSError as e:
        log.error("%s: unmount failed: %s", session.mountpoint, e)
    session._abandoned = True
    _ABANDONED.append(session)  # its handle must outlive the handlers still running
    return int(lib.pyfuse_loop_abandon())
