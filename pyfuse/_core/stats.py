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

An ``async def`` handler's request (the inode API) is timed from its arrival to its reply,
every one of them, in Python (:meth:`Stats.record_async`, called when the request is
answered): ``wait`` is the time before its coroutine first ran (the event loop busy),
``handler`` the coroutine's run to its end (its awaits included), ``pyfuse`` the rest
(handing it over, converting and sending the reply). Its errors are counted there too.
``expected`` errors are ENOENT and ENODATA (a name, or an extended attribute, that is not
there: the everyday negative answers of lookup, getattr and getxattr), counted apart from
the other errors.
"""
from __future__ import annotations

import collections
import errno
import inspect
import threading
import weakref
from time import perf_counter_ns
from typing import Any, Callable

from .._pyfuse_c import ffi, lib
from .dispatch import define, register

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


_EXPECTED = (errno.ENOENT, errno.ENODATA)


class _AsyncRow:
    """The async requests of one operation: counts, and the last WINDOW timings (ns)."""

    __slots__ = ("errors", "expected", "total", "wait", "handler")

    def __init__(self) -> None:
        self.errors = self.expected = 0
        self.total: collections.deque[int] = collections.deque(maxlen=WINDOW)
        self.wait: collections.deque[int] = collections.deque(maxlen=WINDOW)
        self.handler: collections.deque[int] = collections.deque(maxlen=WINDOW)


class Stats:
    """The statistics of one session. :meth:`snapshot` is what ``Session.stats()`` returns."""

    def __init__(self, session: Any, ops: dict[str, int]) -> None:
        """Statistics of ``session`` (its ``_op_<name>`` handlers set) for the operations
        ``ops``, {name: number (PYFUSE_OP_*)}."""
        self.ops = ops
        self._view = _Timed(session, ops)
        c = lib.pyfuse_stats_new(0)  # the view's number: bind()
        if c == ffi.NULL:
            raise MemoryError("stats=True: no memory for the statistics' counters")
        #: What the shim counts into (pyfuse_new's stats), freed with this object.
        self.c = ffi.gc(c, lib.pyfuse_stats_free)
        self._async: dict[str, _AsyncRow] = {}
        self._async_lock = threading.Lock()

    def bind(self) -> int:
        """Give the view a number (pyfuse._core.dispatch.register) that the shim calls timed
        requests with; returned, to be given back once the C session is freed."""
        n = register(self._view)
        self.c.handle = n
        return n

    def record_async(self, op: str, arrived: int, started: int, done: int, err: int) -> None:
        """An async request of ``op`` was answered (``err``: 0 or its errno): perf_counter_ns
        at its arrival, its coroutine's first step (0: never ran) and its end; the reply went
        out just now."""
        end = perf_counter_ns()
        with self._async_lock:
            row = self._async.get(op)
            if row is None:
                row = self._async[op] = _AsyncRow()
            if err:
                row.errors += 1
                row.expected += err in _EXPECTED
            started = started or done
            row.total.append(end - arrived)
            row.wait.append(started - arrived)
            row.handler.append(done - started)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """{operation: {"count", "errors", "expected", "async", "total_us", "handler_us",
        "pyfuse_us", "sum_ms", "share"}} (and "wait_us" for async rows), each ``*_us`` a dict
        of p50, p90, p99, max and mean in microseconds over the last :data:`WINDOW` timed
        requests (one in :data:`SAMPLE`; every async one), ``pyfuse_us`` total minus handler
        (and wait), request by request; ``count`` and ``errors`` count every request,
        ``expected`` the errors that were ENOENT or ENODATA; ``sum_ms`` is count times the
        mean total (where the time goes), ``share`` its fraction of all rows' sum."""
        out: dict[str, dict[str, Any]] = {}
        with self._async_lock:
            rows = {op: (r.errors, r.expected, list(r.total), list(r.wait), list(r.handler))
                    for op, r in self._async.items()}
        for name, op in sorted(self.ops.items()):
            o = self.c.op[op]
            row: dict[str, Any] = {"count": o.count, "errors": o.errors,
                                   "expected": o.expected, "async": name in rows}
            if name in rows:
                errors, expected, total, wait, handler = rows[name]
                row["errors"] += errors
                row["expected"] += expected
                own = [t - w - h for t, w, h in zip(total, wait, handler)]
                row["wait_us"] = _percentiles(wait)
            else:
                n = min(o.timed, WINDOW)
                if n == 0:
                    continue
                total = ffi.unpack(o.total_ns, n)
                handler = ffi.unpack(o.handler_ns, n)
                own = [t - h for t, h in zip(total, handler)]
            row["total_us"] = _percentiles(total)
            row["handler_us"] = _percentiles(handler)
            row["pyfuse_us"] = _percentiles(own)
            row["sum_ms"] = row["total_us"]["mean"] * row["count"] / 1000
            out[name] = row
        whole = sum(r["sum_ms"] for r in out.values()) or 1.0
        for r in out.values():
            r["share"] = r["sum_ms"] / whole
        return out

    def format(self) -> str:
        """The snapshot as a table, one line an operation (for --stats and SIGUSR1); an
        async row's name is marked ``*`` and has a ``wait`` column."""
        lines = [f"{'operation':<16}{'count':>9}{'failed':>7}{'expected':>9}  "
                 f"{'total p50/p99 us':>18}  {'handler p50/p99':>16}  {'pyfuse p50/p99':>15}"
                 f"  {'wait p50/p99':>13}  {'sum ms':>9} {'share':>6}"]
        for name, s in self.snapshot().items():
            t, h, p = s["total_us"], s["handler_us"], s["pyfuse_us"]
            w = s.get("wait_us")
            wait = f"{w['p50']:>6.1f}/{w['p99']:<6.1f}" if w else f"{'-':>6} {'':<6}"
            label = name + (" *" if s["async"] else "")
            lines.append(f"{label:<16}{s['count']:>9}{s['errors'] - s['expected']:>7}"
                         f"{s['expected']:>9}  "
                         f"{t['p50']:>8.1f}/{t['p99']:<9.1f}  {h['p50']:>7.1f}/{h['p99']:<8.1f}"
                         f"  {p['p50']:>6.1f}/{p['p99']:<8.1f}  {wait}  {s['sum_ms']:>9.1f}"
                         f" {s['share']:>6.1%}")
        lines.append("* async def handler: timed from arrival to reply; wait: before its "
                     "coroutine first ran")
        return "\n".join(lines)
