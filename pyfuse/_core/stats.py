"""Per-operation statistics of a session (``stats=True``): counts, errors and where the time
goes, split into the filesystem's handler and pyfuse's own work around it.

Nothing here runs unless a session asks for statistics: :func:`enable` then re-registers every
C-to-Python entry point with a timing wrapper (the plain ones are registered otherwise), and the
session wraps its handlers. The wrappers time each request with ``time.perf_counter_ns``:
``total`` is the whole callback (decoding, the handler, converting and copying the result),
``handler`` the filesystem's method (for readdir also the time spent pulling entries from its
iterator); pyfuse's part is the difference. Latencies are kept for the last
:data:`WINDOW` requests of each operation (a ring per operation: memory is bounded).
"""
from __future__ import annotations

import itertools
import threading
from array import array
from threading import get_ident
from time import perf_counter_ns
from typing import Any, Callable, Optional

from .._pyfuse_c import ffi

__all__ = ["Stats", "enable", "WINDOW"]

#: Requests of each operation whose latencies are kept for the percentiles.
WINDOW = 10_000
_PCTS = (50, 90, 99)
_from_handle = ffi.from_handle


class _Op:
    """One operation's counters and latency rings (nanoseconds)."""

    __slots__ = ("count", "errors", "total", "handler", "seq")

    def __init__(self) -> None:
        self.seq = itertools.count()  # next() is atomic under the GIL
        self.count = 0
        self.errors = 0
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

    def __init__(self) -> None:
        self._ops: dict[str, _Op] = {}
        self._lock = threading.Lock()
        #: Handler time of the request each thread is serving (thread id -> ns).
        self.pending: dict[int, int] = {}

    def op(self, name: str) -> _Op:
        o = self._ops.get(name)
        if o is None:
            with self._lock:
                o = self._ops.setdefault(name, _Op())
        return o

    def add_handler_time(self, ns: int) -> None:
        """Time spent in the filesystem's code during the current request of this thread."""
        ident = get_ident()
        self.pending[ident] = self.pending.get(ident, 0) + ns

    def wrap_handler(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` (a bound handler) timed into the current request's handler time."""
        pending = self.pending

        def timed(*args: Any) -> Any:
            t = perf_counter_ns()
            try:
                return fn(*args)
            finally:
                ident = get_ident()
                pending[ident] = pending.get(ident, 0) + perf_counter_ns() - t

        return timed

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """{operation: {"count", "errors", "total_us", "handler_us", "pyfuse_us"}}, each
        ``*_us`` a dict of p50, p90, p99, max and mean in microseconds over the last
        :data:`WINDOW` requests (``pyfuse_us``: total minus handler, request by request)."""
        out: dict[str, dict[str, Any]] = {}
        for name, o in sorted(self._ops.items()):
            n = min(o.count, WINDOW)
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


_enabled = False
_enable_lock = threading.Lock()


def enable(entries: dict[str, tuple[str, Callable[..., Any], bool]]) -> None:
    """Re-register each entry point ``{C name: (operation, function, void)}`` with a timing
    wrapper (once per process; sessions without statistics then pay one attribute test a
    request). The wrapper records into the session's :class:`Stats`, if it has one."""
    global _enabled
    with _enable_lock:
        if _enabled:
            return
        _enabled = True
        from .dispatch import onerror, void_onerror

        for name, (op, fn, void) in entries.items():
            ffi.def_extern(name=name, onerror=void_onerror if void else onerror)(
                _timed(op, fn))


def _timed(op: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def entry(h: Any, *args: Any) -> Optional[int]:
        st: Optional[Stats] = _from_handle(h)._stats
        if st is None:
            return fn(h, *args)  # type: ignore[no-any-return]
        pending = st.pending
        ident = get_ident()
        pending[ident] = 0
        t = perf_counter_ns()
        r = fn(h, *args)
        total = perf_counter_ns() - t
        o = st._ops.get(op) or st.op(op)
        i = next(o.seq)
        o.count = i + 1
        if type(r) is int and r < 0:
            o.errors += 1
        o.total[i % WINDOW] = total
        o.handler[i % WINDOW] = pending.pop(ident, 0)
        return r  # type: ignore[no-any-return]

    return entry
