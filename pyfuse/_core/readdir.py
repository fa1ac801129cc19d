"""The readdir engine: the Python half of csrc/readdir.c, shared by every API.

One call per kernel READDIR/READDIRPLUS request (:meth:`Listings.serve`). A listing is pulled
from the filesystem's iterable a batch at a time, packed (names in one NUL-separated buffer,
attributes in one array, offsets in another) and handed to ``lib.pyfuse_fill``, whose loop
over libfuse's filler runs in C; what the kernel buffer did not take stays packed in a
:class:`~.stream.DirStream` (pyfuse/_core/stream.py) for the next request of that open
directory. Memory is bounded by the batch (``PYFUSE_READDIR_BATCH`` entries), never by the
directory. See docs/readdir.md.
"""
from __future__ import annotations

import itertools
import types
from collections import OrderedDict
from itertools import islice
from time import perf_counter_ns
from typing import Any, Callable, Iterator, Optional, Union

from .._pyfuse_c import lib
from ..errors import BadReturn
from .batch import OFFSETS, POSITIONAL, PULL, UNKNOWN, Batch
from .batch import hand as _hand
from .batch import pack as _pack
from .batch import pull as _pull
from .stream import Converted, DirStream, TimedBatch, aclose_now

__all__ = ["Listings", "READDIR_BATCH", "PENDING"]

#: Most entries pulled from a readdir iterator (or sliced from its list) per batch handed to C.
#: Bounds the memory a listing holds; the C filler stops at the kernel's buffer size and the rest
#: stays packed for the next request. Defined in csrc/pyfuse_cdef.h, where the compiler checks it
#: against the C duplicate-name table.
READDIR_BATCH: int = lib.PYFUSE_READDIR_BATCH

_fill_timeouts = lib.pyfuse_ll_fill_timeouts
_Coro = types.CoroutineType
_Gen = types.GeneratorType
#: Iterators whose listing Listings._first pulls itself: generators and the builtin iterators
#: listings are made of (each its own iterator; only a generator has a close to run)
_ITERATORS = frozenset({_Gen, zip, map, filter, itertools.chain, itertools.islice,
                        itertools.starmap, type(iter([])), type(iter(())), type(iter(range(0)))})
#: What serve() returns when the answer comes later (an async readdir: see Listings.defer).
PENDING = 1
#: Handleless listings (the inode API without OPENDIR) kept between requests, at most: the
#: oldest is closed when another is kept (a reader that stops half way leaves one behind).
ORPHANS = 64


def _fill(fill: Any, st: DirStream, b: Batch) -> int:
    """Hand a packed batch to C; returns how many entries the kernel buffer took. The rest, if
    any, is kept packed in ``st.left`` for the next request."""
    if st.timeouts is not None:
        _fill_timeouts(fill, *st.timeouts)
    k = _hand(fill, b, st.pos)
    _took(st, b, k, b.n)
    return k


def _took(st: DirStream, b: Batch, k: int, n: int) -> None:
    """The kernel buffer took ``k`` of the ``n`` entries of ``b``: where ``st`` goes on, and
    the rest kept packed in ``st.left``."""
    if k:
        st.pos += k
        st.next_off = st.pos if b.offs is None else b.offs[k - 1]
    if k < n:
        st.left = b.rest(k)


def _replay(batch: list[Any], err: Exception) -> Iterator[Any]:
    """What a generator yielded before it raised ``err``, then ``err`` again: its listing
    served by the general path as if that path had pulled it (:meth:`Listings._first`)."""
    yield from batch
    raise err


class Listings:
    """The listings in progress of one session's open directories, keyed by small integers kept
    in C's ``struct pyfuse_dir`` (never by handles).

    ``fail(exc, op, where)`` is the session's error policy (a negative errno; ``where`` is the
    C argument naming the directory, for the log); ``decode`` turns the C
    argument that names the directory into what the filesystem's readdir takes (a path, an
    inode number); it runs only when a listing starts.
    """

    __slots__ = ("_streams", "_keys", "_fail", "_decode", "requests", "timer", "defer", "spawn",
                 "_orphans", "_modes")

    def __init__(self, fail: Callable[[BaseException, str, Any], int],
                 decode: Callable[[Any], Any]) -> None:
        self._streams: dict[int, DirStream] = {}
        #: Listings of directories read without OPENDIR (no handle to keep their state): by
        #: (directory, the offset that continues them), the oldest first; and each such
        #: directory's offset mode (how a listing restarted at an offset resumes).
        self._orphans: OrderedDict[tuple[Any, int], DirStream] = OrderedDict()
        self._modes: OrderedDict[Any, int] = OrderedDict()
        self._keys = itertools.count(1)
        self._fail = fail
        self._decode = decode
        #: READDIR/READDIRPLUS requests that reached Python (C answers a finished listing's
        #: EOF request itself); one per kernel request otherwise, never one per entry.
        self.requests = 0
        #: With statistics: called with the nanoseconds spent pulling entries from the
        #: filesystem's iterator (its code), once a batch.
        self.timer: Optional[Callable[[int], None]] = None
        #: An API whose readdir may be ``async def``: ``defer(coro, arg, resume, fill)`` is
        #: given the coroutine a readdir returned; it awaits it and then calls
        #: ``resume(iterable)`` (which serves the request with that listing and returns what
        #: :meth:`serve` returns), and returns :data:`PENDING` meanwhile.
        self.defer: Optional[Callable[..., int]] = None
        #: With ``defer``: ``spawn(coro, what)`` runs a coroutine on the event loop without a
        #: request (closing an async iterator's listing).
        self.spawn: Optional[Callable[[Any, str], None]] = None

    def release(self, d: Any) -> None:
        """The directory of ``d`` (struct pyfuse_dir) is closed: close its stream, if any."""
        if d.key:
            self._streams.pop(d.key).close()
            d.key = 0

    def close_all(self) -> None:
        """The session ended: close every stream (their generators' ``finally:`` runs)."""
        for st in [*self._streams.values(), *self._orphans.values()]:
            st.close()
        self._streams.clear()
        self._orphans.clear()

    def _adopt(self, arg: Any, off: int, d: Any) -> None:
        """A handleless request (``d`` is its own): take up the listing it continues, if kept,
        as if ``d`` had kept it; else say how this directory's listings resume."""
        st = self._orphans.pop((arg, off), None)
        if st is not None:
            d.mode = st.mode
            d.key = next(self._keys)
            self._streams[d.key] = st
        else:
            d.mode = self._modes.get(arg, UNKNOWN)

    def _keep(self, arg: Any, d: Any, st: DirStream) -> None:
        """Keep ``st`` for the next request of ``d``'s listing."""
        if not st.handleless:
            d.key = key = next(self._keys)
            self._streams[key] = st
            return
        older = self._orphans.pop((arg, st.next_off), None)
        if older is not None:  # two readers at the same place: either continues them both
            older.close()
        self._orphans[(arg, st.next_off)] = st
        if st.mode != UNKNOWN:
            self._modes[arg] = st.mode
            self._modes.move_to_end(arg)
            if len(self._modes) > 4 * ORPHANS:
                self._modes.popitem(last=False)
        while len(self._orphans) > ORPHANS:
            self._orphans.popitem(last=False)[1].close()

    def serve(self, readdir: Callable[..., Any], arg: Any, off: int, d: Any, fill: Any,
              plus: int) -> int:
        """Answer one READDIR (``plus`` 0) or READDIRPLUS request at ``off`` of the open
        directory ``d`` (struct pyfuse_dir) through ``fill``; 0, a negative errno, or
        :data:`PENDING` (answered later, see ``defer``). ``readdir(decode(arg), offset, fh,
        plus)`` is the filesystem's, called when a listing starts (or restarts after a
        seek)."""
        self.requests += 1
        handleless = d.handleless
        if handleless:
            self._adopt(arg, off, d)
        key = d.key
        st = None
        if key:
            st = self._streams.pop(key, None)
            d.key = 0
            if st is not None and st.next_off != off:
                st.close()  # a seek (rewinddir/seekdir): start over
                st = None
        if st is None:
            try:
                mode = d.mode
                positional = mode != OFFSETS
                r = readdir(self._decode(arg), 0 if positional else off, d.fh, bool(plus))
                if r.__class__ is _Coro:
                    if self.defer is None:
                        r.close()
                        raise BadReturn("readdir returned a coroutine: the path API's "
                                        "handlers are not async")
                    return self.defer(r, arg, lambda items: self.serve(
                        lambda *_: items, arg, off, d, fill, plus), fill)
                first = None if handleless or positional and off else \
                    self._first(r, mode, arg, off, d, fill, plus)
                if first is None:
                    st = self._stream(r, positional and off)
                elif isinstance(first, int):
                    return first
                else:
                    st = first
                st.mode, st.handleless = mode, handleless
            except BaseException as e:
                return self._fail(e, "readdir", arg)
        return self._continue(st, arg, off, d, fill, plus)

    def _first(self, r: Any, mode: int, arg: Any, off: int, d: Any, fill: Any,
               plus: int) -> Union[None, int, DirStream]:
        """The first batch of a listing that starts at its beginning (or at an offset the
        filesystem was given), served as :meth:`_continue` would serve it, but with no
        :class:`DirStream` unless one must be kept: the common small directory is pulled,
        packed and filled in one go (a stream, the general path's frames and its close cost
        about a quarter of such a listing). Only for a list or tuple of at most
        ``READDIR_BATCH`` entries, or for a generator or builtin iterator (``_ITERATORS``)
        without statistics. Returns None for anything else (nothing pulled); what
        :meth:`serve` returns when the request is answered (0: the listing ended, or its rest
        is kept; a negative errno); or the stream of a listing of which nothing went in yet,
        for :meth:`_continue`."""
        t = r.__class__
        b: Optional[Batch] = None
        if (t is list or t is tuple) and PULL is not None and self.timer is None and r \
                and r[0].__class__ is tuple:
            r = iter(r)  # the docs' tuples: pulled in C as an iterator's are, no columns split
            t = r.__class__
        if t is list or t is tuple:
            if len(r) > READDIR_BATCH:
                return None
            batch = r
            exhausted = True
        elif t in _ITERATORS and self.timer is None:
            if PULL is not None:  # the docs' entries packed as pulled
                try:
                    b, batch, err, exhausted = _pull(r, READDIR_BATCH, mode)
                except BaseException as e:  # an attr that does not pack
                    DirStream(r).close()
                    return self._fail(e, "readdir", arg)
                if err is not None:  # what it yielded goes out first, as _continue does it
                    return DirStream(_replay(batch, err))
            else:
                batch = []
                try:
                    batch.extend(islice(r, READDIR_BATCH))
                except Exception as e:  # what it yielded goes out first, as _continue does
                    return DirStream(_replay(batch, e))
                exhausted = len(batch) < READDIR_BATCH
        else:
            return None
        n = len(batch) if b is None else b.n
        if not n:
            return DirStream(None, batch)
        try:
            if b is None:
                b = _pack(mode, batch)
            k = _hand(fill, b, 0)
        except BaseException as e:
            if batch is not r:
                DirStream(r).close()  # a generator's finally: runs, as _continue's close does
            return self._fail(e, "readdir", arg)
        m = POSITIONAL if b.offs is None else OFFSETS
        if m != mode:  # the listing's first batch: C numbers it so
            d.mode = m
        if k == n and exhausted:
            d.eof_off = n if b.offs is None else b.offs[-1]
            return 0
        st = DirStream(None, batch) if exhausted else DirStream(r)
        st.idx, st.mode = n, m
        _took(st, b, k, n)
        if st.left is None:  # the whole batch went in: the next one goes on filling
            return self._continue(st, arg, off, d, fill, plus, k)
        st.cap = k
        self._keep(arg, d, st)
        return 0

    def _stream(self, r: Any, skip: int) -> DirStream:
        """The stream of a listing that starts: ``r`` is what readdir returned; ``skip``
        entries of a positional listing restarted at that offset are passed over."""
        convert = None
        if type(r) is Converted:
            r, convert = r
        if type(r) is list or type(r) is tuple:
            if PULL is not None and self.timer is None and convert is None and r \
                    and r[0].__class__ is tuple:
                # the docs' tuples: stepped by C's pull, as an iterator is (cheaper than
                # slicing and splitting a batch into columns; a list of names or DirEntry
                # objects is not: C would hand it back to Python at its first entry); a
                # restart at an offset starts the iterator there
                it: Any = iter(r)
                if skip:
                    skip = min(skip, len(r))
                    it.__setstate__(skip)
                st = DirStream(it)
                st.pos = st.next_off = skip
                return st
            st = DirStream(None, r)  # served by slicing: no iterator to step
        elif hasattr(r, "__anext__") or hasattr(r, "__aiter__"):
            if self.defer is None:
                aclose_now(r)
                raise BadReturn("readdir returned an async iterator: the path API's handlers "
                                "are not async")
            st = DirStream(None)
            st.ait = r.__aiter__()
            st.spawn = self.spawn
            st.skip = skip
            return st
        else:
            st = DirStream(iter(r))
        st.convert = convert
        if skip:  # resume a positional listing after a restart
            if st.it is None:
                st.idx = skipped = min(skip, len(r))
            else:
                skipped = sum(1 for _ in islice(st.it, skip))
            st.pos = st.next_off = skipped
        return st

    def _continue(self, st: DirStream, arg: Any, off: int, d: Any, fill: Any,
                  plus: int, sent: int = 0) -> int:
        """Fill the request from the stream ``st``: what is left packed from the last
        request, then new batches, until the kernel buffer is full or the listing ends.
        ``sent``: entries this request already holds (an async listing's request resumed
        after a fetch)."""
        if not sent and st.error and st.left is None and st.idx >= len(st.buf):
            st.close()  # everything before the error has been handed out: now report it
            return -st.error
        try:
            while True:
                b, st.left = st.left, None
                err = None
                if b is None:
                    # Pull no more than the kernel buffer is likely to take (as many entries as
                    # the last full one), then probe with one entry: a batch packed in vain
                    # costs as much as one handed out.
                    room = st.cap - sent
                    size = (min(READDIR_BATCH, room) or 1) if room >= 0 and st.cap \
                        else READDIR_BATCH
                    if st.it is None:
                        if st.ait is not None and st.idx >= len(st.buf):
                            # awaited, then this request goes on filling (it stays pending
                            # meanwhile): every reply but the last is a full buffer, as a
                            # synchronous listing's
                            return self._fetch(st, size, arg, off, d, fill, plus, sent)
                        batch = st.buf[st.idx:st.idx + size]
                        st.idx += len(batch)
                    elif PULL is not None and self.timer is None and st.convert is None:
                        b, batch, err, ended = _pull(st.it, size, st.mode)  # the docs' entries
                        if ended:
                            st.it = None
                        if b is not None:
                            mode = POSITIONAL if b.offs is None else OFFSETS
                            if st.mode != mode:  # the listing's first batch: C numbers it so
                                d.mode = st.mode = mode
                    else:
                        batch = []
                        timer = self.timer
                        t0 = perf_counter_ns() if timer is not None else 0
                        try:  # on an exception, what the iterator yielded stays in batch
                            batch.extend(islice(st.it, size))
                        except Exception as e:
                            err = e
                            st.it = None
                        else:
                            if len(batch) < size:
                                st.it = None  # exhausted
                        if timer is not None:
                            timer(perf_counter_ns() - t0)
                    if batch:
                        if st.convert is not None:
                            batch = st.convert(batch, bool(plus))
                        b = _pack(st.mode, batch)
                        mode = POSITIONAL if b.offs is None else OFFSETS
                        if st.mode != mode:  # the listing's first batch: C numbers it so
                            d.mode = st.mode = mode
                if b is not None:
                    sent += _fill(fill, st, b)
                    if st.left is not None:  # the kernel buffer is full
                        st.cap = sent
                        if err is not None:
                            st.error = -self._fail(err, "readdir", arg)
                        break
                if err is not None:
                    if sent == 0:
                        raise err
                    st.error = -self._fail(err, "readdir", arg)
                    break
                if b is None:  # nothing left
                    if st.error:
                        break  # the rest went out: the error surfaces on the next request
                    d.eof_off = eof = st.pos if st.mode != OFFSETS else st.next_off
                    st.close()
                    if st.handleless:  # the kernel's next request at the end finds it ended
                        st.next_off = eof
                        self._keep(arg, d, st)
                    return 0
        except BaseException as e:
            st.close()
            return self._fail(e, "readdir", arg)
        self._keep(arg, d, st)
        return 0

    def _fetch(self, st: DirStream, size: int, arg: Any, off: int, d: Any, fill: Any,
               plus: int, sent: int) -> int:
        """The next batch of an async iterator's listing: awaited on the event loop (an
        iterator may yield a list of entries, taken as a batch of them), then the request,
        which already holds ``sent`` entries, is filled on from it (:meth:`_continue`). An
        error with entries in hand is reported on the next request; with none, it fails
        this one."""
        ait = st.ait

        async def pull() -> list[Any]:
            batch: list[Any] = []
            try:
                while st.skip > 0:  # a positional listing restarted at an offset
                    item = await ait.__anext__()
                    st.skip -= len(item) if isinstance(item, list) else 1
                    st.pos += len(item) if isinstance(item, list) else 1
                while len(batch) < size:
                    item = await ait.__anext__()
                    if type(item) is list:
                        batch.extend(item)
                    elif type(item) is TimedBatch:
                        batch.extend(item)
                        t = st.timeouts
                        st.timeouts = (item.entry_timeout, item.attr_timeout) if t is None \
                            else (min(t[0], item.entry_timeout), min(t[1], item.attr_timeout))
                    else:
                        batch.append(item)
            except StopAsyncIteration:
                st.ait = None
            except Exception as e:
                st.ait = None
                if not batch and not sent:
                    st.close()
                    raise
                st.error = -self._fail(e, "readdir", arg)
            except BaseException:
                st.close()  # cancelled (an interrupt): the listing starts over next time
                raise
            return batch

        def resume(batch: list[Any]) -> int:
            st.buf, st.idx = batch, 0
            if not sent:
                st.next_off = off
            return self._continue(st, arg, off, d, fill, plus, sent)

        assert self.defer is not None
        return self.defer(pull(), arg, resume, fill)
