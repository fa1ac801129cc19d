"""The one body every callback shares, the hooks that catch what escapes it, and libfuse's log.

A callback written with :func:`callback` is a small function ``fn(session, *C arguments)`` that
converts the arguments, calls the filesystem and converts the result; :func:`callback` wraps it
in the body every C-to-Python entry point needs (find the session by its number, map an
exception to an errno by the session's policy) and registers it as the ``extern "Python"``
function of that name. The hottest callbacks (getattr, read, write, readdir) are written out in
full instead, to save the extra call.

Every entry point has an ``onerror`` hook: cffi would otherwise return 0, which the kernel reads
as success.
"""
from __future__ import annotations

import contextlib
import errno
import inspect
import keyword
import logging
import threading
from typing import Any, Callable, Iterator, Optional, TypeVar

from .._pyfuse_c import ffi, lib

__all__ = ["callback", "define", "extern", "onerror", "void_onerror", "log", "EXTERNS",
           "SESSIONS", "register", "unregister", "outs", "keeps", "here", "OUT_SLOTS", "OUT_SIZE",
           "OUT_NAME", "OUT_NAME_SIZE"]

log = logging.getLogger("pyfuse")

_string = ffi.string
_EIO = -errno.EIO

#: What the shim calls back, by number (the ``h`` of every callback: struct pyfuse_session's
#: handle): a session, or the view of it that a timed request gets (stats=True). An integer
#: argument and a list index cost a callback less than a pointer argument (a cdata object)
#: and ``ffi.from_handle``. A number is taken when the C session is made and given back when
#: it is freed (no callback comes after); a freed slot holds None and is used again.
SESSIONS: list[Any] = []
_free: list[int] = []
_slots = threading.Lock()


#: The cheap crossing's out struct (csrc/out.c, struct pyfuse_out), one per serving thread:
#: C copies a request's name or path into it, a callback writes a synchronous handler's answer
#: there, and C replies from it once the callback has returned. A session keeps each
#: thread's as a buffer, by the slot the callback is given (``outs()``, ``here()``).
OUT_SLOTS = lib.PYFUSE_OUT_SLOTS
OUT_SIZE = ffi.sizeof("struct pyfuse_out")
#: where the name or path begins in the struct (the ``name`` member), and how much it holds
OUT_NAME = ffi.offsetof("struct pyfuse_out", "name")
OUT_NAME_SIZE = dict(ffi.typeof("struct pyfuse_out").fields)["name"].type.length
_out_here = lib.pyfuse_out_here
_buffer = ffi.buffer


def outs() -> list[Any]:
    """A new session's out structs by slot, none made yet (slot OUT_SLOTS: none to keep)."""
    return [None] * (OUT_SLOTS + 1)


def keeps() -> list[Any]:
    """A new session's answers given to C by address, by slot (PYFUSE_REPLY_AT): the last
    ``Attr`` each thread answered with, held until the thread's next request, so that it is
    alive while C converts it once the callback has returned. Slot OUT_SLOTS (every slot
    taken, shared by threads) has none: those threads' answers are copied."""
    return [None] * OUT_SLOTS


def here(s: Any, slot: int) -> Any:
    """The calling thread's out struct as a buffer, kept as ``s._outs[slot]`` (its first
    request in session ``s``; every request when all slots are taken)."""
    b = _buffer(_out_here(), OUT_SIZE)
    if slot < OUT_SLOTS:
        s._outs[slot] = b
    return b


def register(obj: Any) -> int:
    """The number under which callbacks will find ``obj`` (held until :func:`unregister`)."""
    with _slots:
        if _free:
            n = _free.pop()
            SESSIONS[n] = obj
            return n
        SESSIONS.append(obj)
        return len(SESSIONS) - 1


def unregister(n: int) -> None:
    """Give back number ``n`` (its C session is freed: no callback will use it again)."""
    with _slots:
        if SESSIONS[n] is not None:
            SESSIONS[n] = None
            _free.append(n)


def onerror(exception: Any, exc_value: Any, traceback: Any) -> Optional[int]:
    """An error in pyfuse's own callback code (not the filesystem's): logged, EIO."""
    log.error("internal error in a pyfuse callback; replying EIO",
              exc_info=(exception, exc_value, traceback))
    return _EIO


def void_onerror(exception: Any, exc_value: Any, traceback: Any) -> None:
    """The same for entry points that return nothing."""
    log.error("internal error in a pyfuse callback", exc_info=(exception, exc_value, traceback))


#: The names of the entry points registered so far (tests check them against
#: csrc/callbacks_cdef.h: an entry point without a def_extern would answer 0, success).
EXTERNS: set[str] = set()
F = TypeVar("F", bound=Callable[..., Any])


def extern(fn: F, name: Optional[str] = None, void: bool = False) -> F:
    """Register ``fn`` as the ``extern "Python"`` entry point of its name (or ``name``), with
    the ``onerror`` hook that fits its return type."""
    name = name or fn.__name__
    ffi.def_extern(name=name, onerror=void_onerror if void else onerror)(fn)
    EXTERNS.add(name)
    return fn


def define(src: str, name: str, filename: str, namespace: dict[str, Any]) -> Any:
    """The function ``name`` that the source ``src`` defines, compiled with ``namespace`` as
    its globals (how the callbacks' shared body, and the statistics' handler wrapper, get each
    function's own parameter list, as collections.namedtuple does)."""
    exec(compile(src, filename, "exec"), namespace)
    return namespace[name]


# The shared body, compiled once per callback with that callback's own parameter list (as
# collections.namedtuple does): the C arguments arrive as plain positional parameters and ``fn``
# is called with them directly, which costs one ordinary call more than a callback written out,
# where a generic ``def entry(h, *args)`` cost two unpacking calls (about 3 % of a chmod
# request's instructions, callgrind).
_BODY = """\
def {name}(h, {params}):
    _s = _SESSIONS[h]
    try:
        _r = fn(_s, {params})
    except BaseException as _e:
        return _s._fail(_e, op, {where})
    return 0 if _r is None else _r
"""
_VOID_BODY = """\
def {name}(h, {params}):
    _s = _SESSIONS[h]
    try:
        fn(_s, {params})
    except BaseException as _e:
        _s._fail(_e, op, {where})
"""
#: The parameter that names what a request is about, for the log (the first found).
_WHERE = ("path", "old", "path_in")


def callback(name: str, op: str, void: bool = False
             ) -> Callable[[Callable[..., Optional[int]]], Callable[..., Optional[int]]]:
    """Register ``fn(session, *args)`` as the ``extern "Python"`` entry point ``name``
    (``pyfuse_cb_mkdir``): the shared body of every callback.

    The entry point takes the C arguments ``fn`` names after ``session``, and replies what ``fn``
    returns (None: 0), or, when it raises, the negative errno ``session._fail(exc, op, where)``
    gives (the error policy of :mod:`pyfuse.errors`; ``op`` and the argument named ``path``,
    ``old`` or ``path_in``, if any, say in the log what failed where). ``void``: the C function
    returns nothing."""

    def register(fn: Callable[..., Optional[int]]) -> Callable[..., Optional[int]]:
        params = list(inspect.signature(fn).parameters)[1:]
        if not all(p.isidentifier() and not keyword.iskeyword(p) and not p.startswith("_")
                   for p in params):
            raise ValueError(f"{fn.__qualname__}: parameters must be plain names without a "
                             "leading underscore (the body's own names have one)")
        where = next((p for p in _WHERE if p in params), "None")
        src = (_VOID_BODY if void else _BODY).format(name=name, params=", ".join(params),
                                                     where=where)
        entry = define(src, name, f"<pyfuse callback {name}>",
                       {"_SESSIONS": SESSIONS, "fn": fn, "op": op})
        entry.__doc__ = fn.__doc__
        entry.__module__ = fn.__module__
        return extern(entry, name, void)

    return register


_LEVELS = [logging.CRITICAL, logging.CRITICAL, logging.CRITICAL, logging.ERROR, logging.WARNING,
           logging.INFO, logging.INFO, logging.DEBUG]
_SHIM = lib.PYFUSE_LOG_SHIM


_captured = threading.local()


@contextlib.contextmanager
def capture_log() -> Iterator[list[str]]:
    """Collect the messages of libfuse's that this thread logs at WARNING or above meanwhile
    (they are logged too): what to say when a libfuse call fails."""
    said: list[str] = []
    _captured.said = said
    try:
        yield said
    finally:
        _captured.said = None


def pyfuse_cb_log(level: int, msg: Any) -> None:
    """A message of libfuse's (syslog level) or of the shim's (PYFUSE_LOG_SHIM + level)."""
    source = "libfuse"
    if level >= _SHIM:
        level -= _SHIM
        source = "shim"
    lvl = _LEVELS[level] if 0 <= level < len(_LEVELS) else logging.INFO
    said = getattr(_captured, "said", None)
    if said is not None and lvl >= logging.WARNING:
        said.append(_string(msg).decode("utf-8", "replace"))
    if log.isEnabledFor(lvl):
        log.log(lvl, "%s: %s", source, _string(msg).decode("utf-8", "replace"))


extern(pyfuse_cb_log, void=True)
