"""Per-operation statistics of a session (``stats=True``): counts, errors and where the time
goes, split into the filesystem's handler and pyfuse's own work around it.

Nothing here runs unless a session asks for statistics: :func:`enable` then re-registers every
C-to-Python entry point with a wrapper (the plain ones are registered otherwise), and the
session wraps its handlers. Every request is counted (and its errno, if any); one request in
:data:`SAMPLE` of each operation is timed with ``time.perf_counter_ns``: ``total`` is the whole
callback (decoding, the handler, converting and copying the result), ``handler`` the
filesystem's method (for readdir also the time spent pulling entries from its iterator);
pyfuse's part is the difference. The timed samples are kept for the last :data:`WINDOW` of
them per operation (a ring per operation: memory is bounded). The wrappers are compiled per
entry point with its own parameters, like the callbacks' shared body (``.dispatch``): timing
every request cost W5 about 20 %.
"""
from __future__ import annotations

import inspect
import itertools
import threading
from array import array
from threading import get_ident
from time import perf_counter_ns
from typing import Any, Callable, Iterable

from .._pyfuse_c import ffi

__all__ = ["Stats", "enable", "WINDOW"]

#: Timed samples of each operation kept for the percentiles.
WINDOW = 10_000
#: One request in SAMPLE of each operation is timed (a power of two).
SAMPLE = 8
_MASK = SAMPLE - 1
_PCTS = (50, 90, 99)
_from_handle = ffi.from_handle


class _Op:
    """One operation's counters and latency rings (nanoseconds)."""

    __slots__ = ("count", "errors", "total", "handler", "seq", "samples", "timed")

    def __init__(self) -> None:
        self.seq = itertools.count()  # next() is atomic under the GIL
        self.count = 0
        self.errors = 0
        self.samples = itertools.count()
        self.timed = 0
        self.total = array("q", bytes(8 * WINDOW))
        self.handler = array("q", bytes(8 * WINDOW))


def _percentiles(values: list[int]) -> dict[str, float]:
    values.sort()
    n = len(values)
    out = {f"p{p}": values[min(n - 1, (n * p) // 100)] / 1000 for p in _PCTS}
    out["max"] = values[-1] / 1000
    out["mean"] = sum(values) / n / 1000
    return out


class Stats:
    """The statistics of one session. :meth:`snapshot` is what ``Session.stats()`` returns."""

    def __init__(self, ops: Iterable[str]) -> None:
        self.ops: dict[str, _Op] = {op: _Op() for op in ops}
        #: Threads serving a timed request -> the handler time so far (ns).
        self.pending: dict[int, int] = {}

    def add_handler_time(self, ns: int) -> None:
        """Time spent in the filesystem's code during the current request of this thread
        (counted only when that request is timed)."""
        ident = get_ident()
        if ident in self.pending:
            self.pending[ident] += ns

    def wrap_handler(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` (a bound handler), timed when the request of this thread is."""
        params = ", ".join(inspect.signature(fn).parameters)
        namespace: dict[str, Any] = {"fn": fn, "pending": self.pending, "get_ident": get_ident,
                     "perf_counter_ns": perf_counter_ns}
        exec(compile(_HANDLER.format(params=params), "<pyfuse stats handler>", "exec"),
             namespace)
        timed: Callable[..., Any] = namespace["timed"]
        return timed

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """{operation: {"count", "errors", "total_us", "handler_us", "pyfuse_us"}}, each
        ``*_us`` a dict of p50, p90, p99, max and mean in microseconds over the last
        :data:`WINDOW` timed requests, one in :data:`SAMPLE` (``pyfuse_us``: total minus
        handler, request by request); ``count`` and ``errors`` count every request."""
        out: dict[str, dict[str, Any]] = {}
        for name, o in sorted(self.ops.items()):
            n = min(o.timed, WINDOW)
            if n == 0:
                continue
            total = list(o.total[:n])
            handler = list(o.handler[:n])
            own = [t - h for t, h in zip(total, handler)]
            out[name] = {"count": o.count, "errors": o.errors,
                         "total_us": _percentiles(total), "handler_us": _percentiles(handler),
                         "pyfuse_us": _percentiles(own)}
        return out

    def format(self) -> str:
        """The snapshot as a table, one line an operation (for --stats and SIGUSR1)."""
        lines = [f"{'operation':<16}{'count':>9}{'errors':>8}  {'total p50/p99 us':>18}  "
                 f"{'handler p50/p99':>16}  {'pyfuse p50/p99':>15}"]
        for name, s in self.snapshot().items():
            t, h, p = s["total_us"], s["handler_us"], s["pyfuse_us"]
            lines.append(f"{name:<16}{s['count']:>9}{s['errors']:>8}  "
                         f"{t['p50']:>8.1f}/{t['p99']:<9.1f}  {h['p50']:>7.1f}/{h['p99']:<8.1f}"
                         f"  {p['p50']:>6.1f}/{p['p99']:<8.1f}")
        return "\n".join(lines)


_HANDLER = """\
def timed({params}):
    _ident = get_ident()
    if _ident not in pending:
        return fn({params})
    _t = perf_counter_ns()
    try:
        return fn({params})
    finally:
        pending[_ident] += perf_counter_ns() - _t
"""

_ENTRY = """\
def {name}(h, {params}):
    _st = _from_handle(h)._stats
    if _st is None:
        return fn(h, {params})
    _o = _st.ops[op]
    _i = next(_o.seq)
    _o.count = _i + 1
    if _i & MASK:
        _r = fn(h, {params})
    else:
        _pending = _st.pending
        _ident = get_ident()
        _pending[_ident] = 0
        _t = perf_counter_ns()
        _r = fn(h, {params})
        _total = perf_counter_ns() - _t
        _k = next(_o.samples)
        _o.timed = _k + 1
        _o.total[_k % WINDOW] = _total
        _o.handler[_k % WINDOW] = _pending.pop(_ident, 0)
    if _r is not None and _r < 0:
        _o.errors += 1
    return _r
"""


_enabled = False
_enable_lock = threading.Lock()


def enable(entries: dict[str, tuple[str, Callable[..., Any], bool]]) -> None:
    """Re-register each entry point ``{C name: (operation, function, void)}`` with a wrapper
    that counts every request and times one in :data:`SAMPLE` (once per process; sessions
    without statistics then pay one attribute test a request)."""
    global _enabled
    with _enable_lock:
        if _enabled:
            return
        _enabled = True
        from .dispatch import onerror, void_onerror

        for name, (op, fn, void) in entries.items():
            params = ", ".join(list(inspect.signature(fn).parameters)[1:])
            assert not any(p.startswith("_") for p in params.split(", ")), name
            namespace: dict[str, Any] = {
                "_from_handle": _from_handle, "fn": fn, "op": op, "MASK": _MASK,
                "WINDOW": WINDOW, "get_ident": get_ident, "perf_counter_ns": perf_counter_ns}
            exec(compile(_ENTRY.format(name=name, params=params), f"<pyfuse stats {name}>",
                         "exec"), namespace)
            ffi.def_extern(name=name, onerror=void_onerror if void else onerror)(
                namespace[name])
