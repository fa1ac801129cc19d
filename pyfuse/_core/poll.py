"""Poll handles, for both APIs: what a ``poll`` handler is given when the kernel wants to be
told that readiness changed (libfuse's ``fuse_pollhandle``)."""
from __future__ import annotations

from typing import Any

from .._pyfuse_c import ffi, lib

__all__ = ["PollHandle", "poll_handle"]


class PollHandle:
    """Given to ``poll`` when the caller of poll(2)/select(2) will sleep until the file is
    ready: keep the latest one of the open file and call :meth:`notify` when its readiness
    changes (data arrived); the kernel then polls again. A handle is good for one notification
    (later polls bring new ones); an unused one is freed when it is collected. Safe from any
    thread; RuntimeError once the session has ended."""

    __slots__ = ("_session", "_ph", "__weakref__")

    def __init__(self, session: Any, ph: Any) -> None:
        self._session = session
        self._ph = ffi.gc(ph, lib.pyfuse_pollhandle_destroy)

    def notify(self) -> None:
        """Wake the callers waiting on this handle's file."""
        self._session._notify("poll notification", lib.pyfuse_notify_poll, self._ph)


def poll_handle(session: Any, ph: Any) -> Any:
    """A PollHandle for the C handle ``ph``, or None for NULL."""
    return None if ph == ffi.NULL else PollHandle(session, ph)
