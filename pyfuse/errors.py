"""The error policy: how an exception raised in a handler becomes the errno the caller sees.

=====================================  ===============================================
raised in a handler                    the caller gets
=====================================  ===============================================
``FuseError(errno)`` / any ``OSError``  that errno (``os.lstat`` failures pass through)
with an errno
an ``OSError`` subclass without an      the errno its class stands for
errno (``FileNotFoundError("gone")``)   (:data:`IMPLIED_ERRNO`: ``ENOENT`` here)
``OSError`` without an errno            ``EIO``, one logged traceback
``NotImplementedError``                 ``ENOSYS``
any other ``Exception``                 ``EIO``, one logged traceback
a wrong return type or value            ``EIO``, one logged error line
``KeyboardInterrupt``, ``SystemExit``   ``EINTR``; the loop stops and ``run()`` re-raises
=====================================  ===============================================
"""
from __future__ import annotations

import errno
import logging
import os

__all__ = ["FuseError", "errno_for", "IMPLIED_ERRNO"]

log = logging.getLogger("pyfuse")

#: The errno an OSError subclass raised without one stands for (the classes Python itself
#: picks for these errnos, PEP 3151); subclasses of these classes count too.
IMPLIED_ERRNO: dict[type, int] = {
    FileNotFoundError: errno.ENOENT,
    FileExistsError: errno.EEXIST,
    PermissionError: errno.EACCES,
    IsADirectoryError: errno.EISDIR,
    NotADirectoryError: errno.ENOTDIR,
    InterruptedError: errno.EINTR,
    BlockingIOError: errno.EAGAIN,
    ChildProcessError: errno.ECHILD,
    ProcessLookupError: errno.ESRCH,
    TimeoutError: errno.ETIMEDOUT,
    BrokenPipeError: errno.EPIPE,
    ConnectionAbortedError: errno.ECONNABORTED,
    ConnectionRefusedError: errno.ECONNREFUSED,
    ConnectionResetError: errno.ECONNRESET,
}


class FuseError(OSError):
    """An error with an errno for the process that made the request: ``raise FuseError(ENOENT)``."""

    def __init__(self, errno_: int, message: str | None = None) -> None:
        super().__init__(errno_, message or os.strerror(errno_))


class BadReturn(TypeError):
    """A handler returned something of the wrong type or value (logged as an error, EIO)."""


class BadListing(BadReturn):
    """A readdir gave an entry the kernel would refuse (a name that is empty, has '/' or is
    too long; an attribute without a file type...): EIO on every face, pyfuse.compat's
    included, as the kernel answers such a listing of any FUSE filesystem."""


def errno_for(exc: BaseException, op: str) -> int:
    """Map an exception raised by handler ``op`` to a positive errno, logging as the policy says.

    BaseExceptions that are not Exceptions are not handled here (see the session)."""
    if isinstance(exc, OSError):
        if isinstance(exc.errno, int) and exc.errno > 0:
            return exc.errno
        for cls in type(exc).__mro__:
            implied = IMPLIED_ERRNO.get(cls)
            if implied is not None:
                return implied
    if isinstance(exc, NotImplementedError):
        return errno.ENOSYS
    if isinstance(exc, BadReturn):
        log.error("%s: %s", op, exc)
        return errno.EIO
    log.error("%s raised %s: %s; replying EIO", op, type(exc).__name__, exc, exc_info=exc)
    return errno.EIO
