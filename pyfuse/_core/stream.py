"""A listing between requests: the readdir engine's :class:`DirStream` (what an open directory's
listing keeps from one READDIR request to the next) and the two shapes another API's readdir
hands the engine, :class:`Converted` and :class:`TimedBatch`. The engine itself is
pyfuse/_core/readdir.py; see docs/readdir.md.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

from .batch import UNKNOWN, Batch
from .dispatch import log

__all__ = ["Converted", "DirStream", "TimedBatch", "aclose_now"]


class Converted(NamedTuple):
    """What a readdir handler of another API returns when its entries need converting:
    ``items`` (a list, tuple or iterable of that API's entries) and ``convert(batch, plus)``,
    which turns a batch of them into pyfuse entries just before it is packed; ``plus`` says
    whether the request at hand is READDIRPLUS. Conversion happens a batch at a time, so what
    it costs (attributes fetched for readdirplus, say) is paid only for the entries a request
    hands out, and only when that request wants them."""

    items: Any
    convert: Callable[[list[Any], bool], list[Any]]


class TimedBatch(list):  # type: ignore[type-arg]
    """A batch an async readdir yields with the timeouts its readdirplus entries get (seconds,
    finite, >= 0), instead of the session's: pyfuse.compat.pyfuse3's, whose entries carry
    their own. A listing's entries get the lowest timeouts of the batches fetched so far."""

    __slots__ = ("entry_timeout", "attr_timeout")

    def __init__(self, entries: Any, entry_timeout: float, attr_timeout: float) -> None:
        super().__init__(entries)
        self.entry_timeout, self.attr_timeout = entry_timeout, attr_timeout


class DirStream:
    """A listing in progress, kept between READDIR requests of one open directory.

    Entries come from the filesystem's list or tuple ``buf`` (sliced a batch at a time from
    ``idx``, never copied whole) or from its iterator ``it`` (``None`` once exhausted, or for a
    list). ``left`` is the packed rest of a batch that the last kernel buffer did not take.
    ``mode`` mirrors the listing's ``struct pyfuse_dir`` mode, and ``handleless`` its flag: a
    field of that struct costs a cffi attribute access (about 500 instructions) each time it
    is read, so the engine reads each once a request and writes the mode only when it changes.
    """

    __slots__ = ("it", "buf", "idx", "left", "cap", "next_off", "pos", "error", "convert", "ait",
                 "skip", "spawn", "timeouts", "mode", "handleless")

    def __init__(self, it: Any, buf: Any = ()) -> None:
        self.convert: Optional[Callable[[list[Any], bool], list[Any]]] = None
        self.it = it
        #: an async iterator's listing (an ``async def readdir`` generator): fetched a batch
        #: at a time into ``buf`` on the event loop; ``skip``: entries to pass over first
        self.ait: Any = None
        self.skip = 0
        self.spawn: Optional[Callable[[Any, str], None]] = None
        self.buf = buf
        self.idx = 0
        self.left: Optional[Batch] = None
        self.cap = 0           # entries the last full kernel buffer took: the next one's size
        self.next_off = 0      # the request offset that continues this stream
        self.pos = 0           # positional mode: entries handed to the kernel so far
        self.error = 0         # errno raised after some entries, reported on the next request
        #: (entry, attr) timeouts of the readdirplus entries (a TimedBatch's); None: the Config's
        self.timeouts: Optional[tuple[float, float]] = None
        #: the listing's offset mode (struct pyfuse_dir's, which also keeps it between a
        #: handleless listing's requests); handleless: the listing's requests come without
        #: OPENDIR (struct pyfuse_dir's handleless)
        self.mode = UNKNOWN
        self.handleless = 0

    def close(self) -> None:
        ait, self.ait = self.ait, None
        if ait is not None and hasattr(ait, "aclose"):
            if self.spawn is not None:
                self.spawn(ait.aclose(), "closing a readdir iterator")  # its finally: runs
            else:
                aclose_now(ait)
        it, self.it = self.it, None
        close = None if it is None else getattr(it, "close", None)
        self.buf = ()
        self.left = None
        if close is not None:
            try:
                close()  # runs a generator's finally: blocks
            except Exception:
                log.exception("closing a readdir iterator raised")


def aclose_now(ait: Any) -> None:
    """Close an async generator that never started (no event loop needed)."""
    try:
        ait.aclose().close()
    except Exception:
        pass
