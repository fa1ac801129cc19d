"""The caller of the request being served, for both APIs: :func:`pyfuse.context`, with
``Context.interrupted`` and ``Context.groups``.

A synchronous handler runs on the thread that received its request: the shim knows that
request (libfuse's context for the path API, ``pyfuse_ll_current`` for the inode API). An
``async def`` handler of the inode API runs on pyfuse's event loop: its request is carried by a
:mod:`contextvars` variable set by the task that runs it (:mod:`pyfuse.lowlevel._aio`).
"""
from __future__ import annotations

import contextvars
from typing import Any, Optional

from .._pyfuse_c import ffi, lib
from ..types import Context

__all__ = ["context", "interrupted", "groups", "CURRENT"]

#: The async request being served by the current task (an object with ``req``, ``ctx`` and
#: ``interrupted``), or None.
CURRENT: contextvars.ContextVar[Optional[Any]] = contextvars.ContextVar("pyfuse_request",
                                                                        default=None)
_NGROUPS = 64


def _req() -> Any:
    p = CURRENT.get()
    return 0 if p is None else p.req


def context() -> Context:
    """The uid, gid, pid and umask of the process whose request is being served. Only valid
    inside a handler (a synchronous one, or the coroutine of an async one); raises
    RuntimeError elsewhere. ``.interrupted`` and ``.groups`` ask about that same request."""
    p = CURRENT.get()
    if p is not None:
        return p.ctx  # type: ignore[no-any-return]
    c = ffi.new("struct pyfuse_ctx *")
    if lib.pyfuse_req_context(0, c) != 0:
        raise RuntimeError("pyfuse.context() called outside a filesystem request")
    return Context(c.uid, c.gid, c.pid, c.umask)


def request_context(req: Any) -> Context:
    """The caller of the inode API's request ``req``."""
    c = ffi.new("struct pyfuse_ctx *")
    lib.pyfuse_req_context(req, c)
    return Context(c.uid, c.gid, c.pid, c.umask)


def interrupted() -> bool:
    """Whether the kernel has interrupted the request being served (its caller got a signal
    and no longer waits for the answer)."""
    p = CURRENT.get()
    if p is not None:
        return bool(p.interrupted)
    return bool(lib.pyfuse_interrupted(0))


def groups() -> tuple[int, ...]:
    """The supplementary groups of the process whose request is being served (read from
    /proc by libfuse; empty if that process is gone)."""
    req = _req()
    size = _NGROUPS
    while True:
        buf = ffi.new("uint32_t[]", size)
        n = lib.pyfuse_getgroups(req, size, buf)
        if n < 0:
            if CURRENT.get() is None and req == 0 and n == -2:  # -ENOENT: no request
                raise RuntimeError("pyfuse.context().groups asked outside a filesystem request")
            return ()
        if n <= size:
            return tuple(buf[0:n])
        size = n
