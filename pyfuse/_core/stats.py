"""Per-operation statistics of a session (``stats=True``): counts, errors and where the time
goes, split into the filesystem's handler and pyfuse's own work around it.

The counting is the shim's (csrc/stats.c): each call into Python is counted, errno results
too, and one request in :data:`SAMPLE` of each operation is timed in C around the call.
``total`` is that call (waiting for the GIL, decoding, the handler, converting and copying the
result); ``handler`` is the filesystem's method (for readdir also the time spent pulling
entries from its iterator); pyfuse's part is the difference. A timed request's callback is
given a view of the session (:class:`_Timed`) whose handlers are wrapped to time themselves;
the other requests get the session itself, so they run exactly the Python they run without
statistics, and the C side adds one counter increment. The last :data:`WINDOW` timed requests
of each operation are kept (rings in C: memory is bounded).
"""
from __future__ import annotations

import inspect
import weakref
from time import perf_counter_ns
from typing import Any, Callable

from .._pyfuse_c import ffi, lib
from .dispatch import define

__all__ = ["Stats", "WINDOW", "SAMPLE"]

#: Timed requests kept per operation for the percentiles.
WINDOW: int = lib.PYFUSE_STATS_WINDOW
#: One request in SAMPLE of each operation is timed.
SAMPLE: int = lib.PYFUSE_STATS_SAMPLE
_PCTS = (50, 90, 99)
#: Adds nanoseconds of the filesystem's code to this thread's current (timed) request.
add_handler_time: Callable[[int], None] = lib.pyfuse_stats_handler


def _percentiles(values: list[int]) -> dict[str, float]:
    values.sort()
    n = len(values)
    out = {f"p{p}": values[min(n - 1, (n * p) // 100)] / 1000 for p in _PCTS}
    out["max"] = values[-1] / 1000
    out["mean"] = sum(values) / n / 1000
    return out


_HANDLER = """\
def timed({params}):
    _t = perf_counter_ns()
    try:
        return fn({params})
    finally:
        add(perf_counter_ns() - _t)
"""


def _timed(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a bound handler), reporting its time to the current request's statistics."""
    params = ", ".join(
        ("*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else "") + name
        for name, p in inspect.signature(fn).parameters.items())
    wrapped: Callable[..., Any] = define(
        _HANDLER.format(params=params), "timed", "<pyfuse stats handler>",
        {"fn": fn, "add": add_handler_time, "perf_counter_ns": perf_counter_ns})
    return wrapped


class _Timed:
    """What a timed request's callback sees instead of the session: the session's handlers
    (``_op_<name>``), each timed; every other attribute, read or set, is the session's."""

    def __init__(self, session: Any, ops: dict[str, int]) -> None:
        own = vars(self)
        own["_session"] = weakref.proxy(session)  # the session owns its Stats: no cycle
        for name in ops:
            if hasattr(session, "_op_" + name):  # rows served by another row's method have none
                meth = getattr(session, "_op_" + name)
                own["_op_" + name] = None if meth is None else _timed(meth)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._session, name, value)


class Stats:
    """The statistics of one session. :meth:`snapshot` is what ``Session.stats()`` returns."""

    def __init__(self, session: Any, ops: dict[str, int]) -> None:
        """Statistics of ``session`` (its ``_op_<name>`` handlers set) for the operations
        ``ops``, {name: number (PYFUSE_OP_*)}."""
        self.ops = ops
        self._view = _Timed(session, ops)
        self._view_handle = ffi.new_handle(self._view)
        c = lib.pyfuse_stats_new(self._view_handle)
        if c == ffi.NULL:
            raise MemoryError("stats=True: no memory for the statistics' counters")
        #: What the shim counts into (pyfuse_new's stats), freed with this object.
        self.c = ffi.gc(c, lib.pyfuse_stats_free)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """{operation: {"count", "errors", "total_us", "handler_us", "pyfuse_us"}}, each
        ``*_us`` a dict of p50, p90, p99, max and mean in microseconds over the last
        :data:`WINDOW` timed requests, one in :data:`SAMPLE` (``pyfuse_us``: total minus
        handler, request by request); ``count`` and ``errors`` count every request."""
        out: dict[str, dict[str, Any]] = {}
        for name, op in sorted(self.ops.items()):
            o = self.c.op[op]
            n = min(o.timed, WINDOW)
            if n == 0:
                continue
            total = ffi.unpack(o.total_ns, n)
            handler = ffi.unpack(o.handler_ns, n)
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
