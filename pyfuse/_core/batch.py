"""Packing a batch of readdir entries for the shim (``lib.pyfuse_fill``): names in one
NUL-separated buffer, attributes in one array, offsets and inode numbers in others, checked
on the way (the offset mode of the listing, names, attributes); the readdir engine
(:mod:`pyfuse._core.readdir`) pulls the batches and hands them to C. :func:`pack` makes a
:class:`Batch` of entries pulled by Python; :func:`pull` pulls a batch from an iterator and,
for the docs' ``(name, attr)`` tuples, packs it in C as it goes (``pyfuse._pull``);
:func:`hand` gives a batch to C, and :func:`culprit` names the entry C refused.
"""
from __future__ import annotations

import ctypes
import errno
import stat
import struct
import sys
from typing import Any, Callable, Optional

from .. import _pull
from .._pyfuse_c import ffi, lib
from ..errors import BadListing, BadReturn
from ..types import Attr, DirEntry
from .convert import ATTR_STRUCT, ENC, NO_ATTR, pack_attr

__all__ = ["Batch", "pack", "pull", "PULL", "hand", "culprit", "FILL_ERRORS", "POSITIONAL",
           "OFFSETS", "UNKNOWN"]

#: A listing's offset mode (struct pyfuse_dir's), fixed by its first batch.
POSITIONAL: int = lib.PYFUSE_DIR_POSITIONAL
OFFSETS: int = lib.PYFUSE_DIR_OFFSETS
UNKNOWN: int = lib.PYFUSE_DIR_UNKNOWN
_ATTR_SIZE = ATTR_STRUCT.size
_OFF_SIZE = 8  # the offsets and inode numbers handed to C: int64_t, uint64_t
_NULL = ffi.NULL
_fill_c = lib.pyfuse_fill
_fill_checked = lib.pyfuse_fill_checked
#: struct packers of n offsets ("q") or inode numbers ("Q"), by (code, n), for n up to
#: lib.PYFUSE_READDIR_BATCH (a batch is at most that, but for an async listing's own)
_PACKERS: dict[tuple[str, int], Callable[..., bytes]] = {}


def _int64s(code: str, values: Any) -> bytes:
    """``values`` as native 64-bit integers (``code`` "q": signed, "Q": unsigned), in one
    struct call (an array's constructor parses each item's argument: four times the cost).
    Raises struct.error for a value that is not an integer or is out of range."""
    n = len(values)
    pack = _PACKERS.get((code, n))
    if pack is None:
        pack = struct.Struct(f"={n}{code}").pack
        if n <= lib.PYFUSE_READDIR_BATCH:
            _PACKERS[code, n] = pack
    return pack(*values)


class Batch:
    """``n`` entries packed for ``lib.pyfuse_fill``: names (and their NUL-separated encoding),
    packed attributes with their stride (0: one shared), offsets (``None``: positional), inode
    numbers that replace the attributes' (``None``: none). ``checked``: the names were checked
    as they were packed (:func:`pull`), so C takes them as they are (``pyfuse_fill_checked``);
    such a batch keeps no names but their encoding (:meth:`names_of`), and ``checked`` says
    what they were: 1 str, 2 bytes."""

    __slots__ = ("names", "blob", "attrs", "stride", "offs", "offs_c", "inos", "inos_c", "n",
                 "checked")

    def __init__(self, names: Any, blob: bytes, attrs: Any, stride: int, offs: Any,
                 offs_c: Any, inos: Any = None, inos_c: Any = _NULL, n: int = -1,
                 checked: int = 0) -> None:
        self.names, self.blob, self.attrs, self.stride = names, blob, attrs, stride
        self.offs, self.offs_c, self.inos, self.inos_c = offs, offs_c, inos, inos_c
        self.n = len(names) if n < 0 else n
        self.checked = checked

    def names_of(self) -> Any:
        """The entries' names (a checked batch's from its encoding)."""
        if self.names is not None:
            return self.names
        if self.checked == 2:
            return self.blob.split(b"\0")
        return self.blob.decode(ENC, "surrogateescape").split("\0")

    def rest(self, k: int) -> Batch:
        """The entries from k on, still packed (the names are joined again, or a checked
        batch's encoding cut after its k-th name: C speed)."""
        names = None if self.checked else self.names[k:]
        return Batch(names,
                     self.blob.split(b"\0", k)[k] if names is None else _join(names),
                     self.attrs[k * self.stride:] if self.stride else self.attrs, self.stride,
                     None if self.offs is None else self.offs[k:],
                     self.offs_c if self.offs is None else self.offs_c[k * _OFF_SIZE:],
                     None if self.inos is None else self.inos[k:],
                     self.inos_c if self.inos is None else self.inos_c[k * _OFF_SIZE:],
                     self.n - k, self.checked)


if sys.version_info >= (3, 10):
    def _columns(batch: list[Any]) -> tuple[Any, ...]:
        """The batch's columns (one ``zip`` pass), or () if its entries differ in length."""
        try:
            return tuple(zip(*batch, strict=True))
        except (TypeError, ValueError):
            return ()
else:  # no zip(strict=): zip stops at the shortest entry, which the sum of lengths shows
    def _columns(batch: list[Any]) -> tuple[Any, ...]:
        """The batch's columns (one ``zip`` pass), or () if its entries differ in length."""
        try:
            cols = tuple(zip(*batch))
            return cols if sum(map(len, batch)) == len(cols) * len(batch) else ()
        except TypeError:
            return ()


def _split(batch: list[Any], fast: bool = True) -> tuple[Any, bytes, Any, Any, Any]:
    """(names, their NUL-separated encoding, attrs, offsets, inos) of a batch of entries.

    ``fast``: the common batches (all names, or (name, attr[, offset[, ino]]) tuples and
    DirEntry objects of one length) are split at C speed, one ``zip`` pass, without looking
    at each entry's type: names that are not str, attrs that do not pack and offsets or inode
    numbers that are not integers are caught later by the join, the packing and the arrays,
    and so is any other entry the zip took apart (a str or bytes entry among tuples puts its
    characters in the attribute and offset columns), after which :func:`pack` splits the batch
    again with ``fast=False``: each entry normalised by its type, or refused by name.
    ``inos`` (None unless the entries are 4-tuples) replace the attributes' inode numbers: one
    attribute template shared by entries that each have their own inode (packed once, not
    once an entry).
    """
    t = type(batch[0])
    if not fast:
        pass
    elif t is str:
        try:
            return batch, "\0".join(batch).encode(ENC, "surrogateescape"), None, None, None
        except TypeError:
            pass  # not only names: normalise below
    elif t is DirEntry or t is tuple:
        cols = _columns(batch)
        if len(cols) == 4:
            return cols[0], _join(cols[0]), cols[1], cols[2], cols[3]
        if len(cols) == 3:
            return cols[0], _join(cols[0]), cols[1], cols[2], None
        if len(cols) == 2:
            return cols[0], _join(cols[0]), cols[1], None, None
    norm: list[tuple[Any, ...]] = []
    for i, e in enumerate(batch):
        if isinstance(e, str):
            norm.append((e, None, 0, 0))
        elif isinstance(e, DirEntry):
            norm.append((*e, 0))
        elif type(e) is tuple and 2 <= len(e) <= 4:
            norm.append(e + (None, 0, 0)[len(e) - 1:])
        elif isinstance(e, (bytes, bytearray)):
            norm.append((bytes(e).decode(ENC, "surrogateescape"), None, 0, 0))
        else:
            raise BadReturn(f"readdir must yield str, DirEntry or (name, attr[, offset[, ino]]) "
                            f"tuples, not {type(e).__name__} (entry {i} of the batch: {e!r:.80})")
    names, attrs, offs, inos = zip(*norm)
    return names, _join(names), attrs, offs, inos if any(inos) else None


def _join(names: Any) -> bytes:
    """The names NUL-separated and encoded: str names, bytes names (taken as they are, as
    pyfuse.compat's pyfuse3 listings give them), or both mixed."""
    try:
        if names and type(names[0]) is bytes:
            return b"\0".join(names)
        return "\0".join(names).encode(ENC, "surrogateescape")
    except TypeError:
        pass
    try:
        return b"\0".join(n if type(n) is bytes else n.encode(ENC, "surrogateescape")
                          for n in names)
    except (TypeError, AttributeError):
        bad = next((n for n in names if not isinstance(n, (str, bytes))), None)
        raise BadReturn(f"readdir entry names must be str or bytes, not {type(bad).__name__} "
                        f"({bad!r:.80})") from None


def _packed(a: Any) -> bytes:
    """One entry's attributes packed: ``bytes`` of struct pyfuse_attr's size are taken as
    packed already (pyfuse.compat's pyfuse3 listings pack each ``EntryAttributes`` as it is
    given), anything else as :func:`pack_attr` packs it."""
    if type(a) is bytes and len(a) == _ATTR_SIZE:
        return a
    return pack_attr(a)


def _pack_attrs(attrs: Any) -> tuple[Any, int]:
    """The packed attributes of a batch and their stride: (NULL, 0) when no entry has any, one
    packed attribute with stride 0 when all entries share one object (or equal ones)."""
    a0 = attrs[0]
    # One shared template (or equal ones), or all None. Tuple equality tests identity first, in
    # C, and stops at the first difference (one Attr.__eq__ call at most).
    if a0 is attrs[-1] and attrs == (a0,) * len(attrs):
        return (_NULL, 0) if a0 is None else (_packed(a0), 0)
    # Each its own Attr (an inode table's; an Attr is its C struct) or packed already
    # (pyfuse.compat's, bytes): joined at C speed. Anything else (None, an os.stat_result)
    # stops the join, or gives a blob of the wrong size: packed one by one below.
    try:
        blob = b"".join(attrs)
    except TypeError:
        blob = b""
    if len(blob) == _ATTR_SIZE * len(attrs):
        return blob, _ATTR_SIZE
    memo: dict[int, bytes] = {}  # entries often share a few Attr objects: pack each once
    out = []
    for a in attrs:
        r = memo.get(id(a))
        if r is None:
            r = memo[id(a)] = NO_ATTR if a is None else _packed(a)
        out.append(r)
    return b"".join(out), _ATTR_SIZE


FILL_ERRORS = {
    errno.EDOM: "readdir yielded, for readdirplus, an attr with inode number 0 (the inode API "
                "needs each child's number)",
    errno.EINVAL: "readdir yielded an invalid name: empty, or containing '/' or NUL",
    errno.ENAMETOOLONG: "readdir yielded a name longer than 255 bytes",
    errno.EEXIST: "readdir yielded the same name twice",
    errno.EBADMSG: "readdir yielded an attr whose mode has no valid file type",
    errno.ERANGE: "readdir mixed entries with offset 0 and entries with offsets (give every "
                  "entry an offset, or none), or yielded a negative offset",
}


#: pyfuse._pull.pull, or None where it is not offered (Python 3.9: see csrc/cpython/pull.c)
PULL: Optional[Callable[..., Any]] = _pull.pull if _pull.available else None
_SHARED, _BYTES, _PACKED = _pull.SHARED, _pull.BYTES, _pull.PACKED
_probe = Attr()
#: pyfuse._pull copies each Attr's bytes as it pulls it (no join of the batch's attrs after),
#: where ctypes keeps them as it always has (checked here, on one Attr)
ATTRS_IN_C: bool = PULL is not None and _pull.use_attr(Attr, _probe, ctypes.addressof(_probe),
                                                       ctypes.sizeof(Attr))
del _probe
if _pull.MAX_BATCH < lib.PYFUSE_READDIR_BATCH:  # csrc/cpython/pull.c's, the shim's
    raise ImportError(f"pyfuse._pull takes batches of at most {_pull.MAX_BATCH} entries, "
                      f"the shim's are of {lib.PYFUSE_READDIR_BATCH}: rebuild pyfuse")


_MIXED = ("readdir changed between positional entries (offset 0) and entries with offsets "
          "within one listing")
_INOS_ALONE = ("readdir yielded (name, attr, offset, ino) entries without an attr (the inode "
               "number replaces the attr's)")


def pull(it: Any, size: int, mode: int) -> tuple[Optional[Batch], list[Any], Optional[Exception],
                                                bool]:
    """Pull up to ``size`` entries from the listing's iterator ``it`` in C (:data:`PULL`, not
    None), whose listing has the offset mode ``mode``; returns ``(batch, entries, error,
    ended)``:

    - ``(name, attr[, offset[, ino]])`` tuples (the docs' entries; a name ``str`` or
      ``bytes``) come packed (``batch``, checked; ``entries`` empty);
    - at the first entry C does not take (another shape, a name to refuse or to encode with
      surrogateescape) C pulls the rest of the batch as it comes, and ``batch`` is None:
      ``entries`` are all the batch's entries, as the engine pulls them, for :func:`pack`;
    - ``error``: what the iterator raised (an Exception; any other is raised here), with the
      entries pulled before it in ``entries`` (``batch`` None);
    - ``ended``: the iterator has no more (exhausted, or it raised).

    Raises BadReturn, as :func:`pack` does, for a batch whose attrs do not pack or whose
    offset mode is not the listing's."""
    assert PULL is not None
    blob, k, flags, attrs, offs_c, inos_c, rest, err = PULL(it, size)
    shared = flags & _SHARED
    if rest is None and err is None:
        if not k:
            return None, [], None, True
        if offs_c is not None and mode == POSITIONAL or offs_c is None and mode == OFFSETS:
            raise BadReturn(_MIXED)
        try:
            attrs_c, stride = ((_NULL, 0) if attrs is None else (_packed(attrs), 0)) \
                if shared else (attrs, _ATTR_SIZE) if flags & _PACKED else _pack_attrs(attrs)
        except Exception as e:
            raise BadReturn(f"readdir yielded an invalid attr: {e}") from None
        if inos_c is not None and attrs_c == _NULL:
            raise BadReturn(_INOS_ALONE)
        return Batch(None, blob, attrs_c, stride,
                     None if offs_c is None else memoryview(offs_c).cast("q"),
                     _NULL if offs_c is None else offs_c,
                     None if inos_c is None else memoryview(inos_c).cast("Q"),
                     _NULL if inos_c is None else inos_c, k, bool(flags & _BYTES) + 1), [], \
            None, k < size
    if err is not None and not isinstance(err, Exception):
        raise err
    # the entries C took, as Python would have pulled them, then the rest as they came
    entries: list[Any] = []
    if k:
        names = blob.split(b"\0") if flags & _BYTES else \
            blob.decode(ENC, "surrogateescape").split("\0")
        attrs = (attrs,) * k if shared else attrs
        if inos_c is not None:
            entries = list(zip(names, attrs, memoryview(offs_c or bytes(8 * k)).cast("q"),
                               memoryview(inos_c).cast("Q")))
        elif offs_c is not None:
            entries = list(zip(names, attrs, memoryview(offs_c).cast("q")))
        else:
            entries = list(zip(names, attrs))
    if rest is not None:
        entries += rest
    return None, entries, err, err is not None or len(entries) < size


def pack(mode: int, batch: list[Any]) -> Batch:
    """Pack a batch of entries for C, checking that it keeps to the listing's offset mode
    ``mode`` (UNKNOWN before its first batch); the batch's own mode is POSITIONAL if its
    ``offs`` is None, else OFFSETS."""
    try:
        return _pack(mode, batch, True)
    except BadReturn:  # perhaps an entry the fast split took apart: each by its type
        return _pack(mode, batch, False)


def _pack(listing_mode: int, batch: list[Any], fast: bool) -> Batch:
    names, blob, attrs, offs, inos = _split(batch, fast)
    if offs is None or not any(offs):
        offs_c = _NULL
        mode = POSITIONAL
    else:  # C refuses an offset <= 0 as the entry goes in (ERANGE: FILL_ERRORS)
        try:
            offs_c = _int64s("q", offs)
        except struct.error:
            bad = next((o for o in offs if not _int64(o, True)), None)
            raise BadReturn(f"readdir yielded an invalid offset: {bad!r:.80}") from None
        mode = OFFSETS
    if listing_mode != mode and listing_mode != UNKNOWN:
        raise BadReturn(_MIXED)
    try:
        attrs_c, stride = (_NULL, 0) if attrs is None else _pack_attrs(attrs)
    except Exception as e:
        raise BadReturn(f"readdir yielded an invalid attr: {e}") from None
    inos_c = _NULL
    if inos is not None:
        if attrs_c == _NULL:
            raise BadReturn(_INOS_ALONE)
        try:
            inos_c = _int64s("Q", inos)
        except struct.error:
            bad = next((i for i in inos if not _int64(i, False)), None)
            raise BadReturn(f"readdir yielded an invalid inode number: {bad!r:.80}") from None
    return Batch(names, blob, attrs_c, stride, None if mode == POSITIONAL else offs, offs_c,
                  inos, inos_c)


def hand(fill: Any, b: Batch, base: int) -> int:
    """Hand batch ``b`` to C's filler ``fill`` (``lib.pyfuse_fill``, or for names checked
    already ``pyfuse_fill_checked``), the listing's entries before it ``base``: how many the
    kernel buffer took. Raises BadListing, naming the entry, for an entry C refused."""
    if b.checked:
        k = _fill_checked(fill, b.blob, b.n, b.offs_c, b.attrs, b.stride, b.inos_c, base)
    else:
        k = _fill_c(fill, b.blob, len(b.blob), b.n, b.offs_c, b.attrs, b.stride, b.inos_c, base)
    if k < 0:
        raise BadListing(f"{FILL_ERRORS.get(-k, 'readdir: invalid batch')}: "
                         f"{culprit(b, -k, base)}")
    return k


def _int64(v: Any, signed: bool) -> bool:
    """Whether ``v`` packs as one (signed or unsigned) 64-bit integer."""
    try:
        struct.pack("=q" if signed else "=Q", v)
        return True
    except struct.error:
        return False


def culprit(b: Batch, err: int, base: int) -> str:
    """Which entry C refused: "entry N of the listing ('name')" (looked for only on error);
    ``base``: the entries of the listing before this batch."""
    shown = b.names_of()
    names = [n.encode(ENC, "surrogateescape") if isinstance(n, str) else n for n in shown]
    seen: set[bytes] = set()
    for i, raw in enumerate(names):
        if err == errno.EINVAL and (not raw or b"/" in raw or b"\0" in raw) \
                or err == errno.ENAMETOOLONG and len(raw) > 255 \
                or err == errno.EEXIST and raw in seen:
            return f"entry {base + i} of the listing ({shown[i]!r:.80})"
        seen.add(raw)
        if err == errno.ERANGE and b.offs is not None and b.offs[i] <= 0:
            return f"entry {base + i} of the listing ({shown[i]!r:.80}, offset {b.offs[i]})"
        if err == errno.EDOM and b.attrs and raw not in (b".", b".."):
            fields = ATTR_STRUCT.unpack(b.attrs[i * b.stride:i * b.stride + _ATTR_SIZE])
            if fields[0] and (b.inos[i] if b.inos is not None else fields[1]) == 0:
                return f"entry {base + i} of the listing ({shown[i]!r:.80})"
        if err == errno.EBADMSG and b.attrs:
            a = b.attrs[i * b.stride:i * b.stride + _ATTR_SIZE]
            mode = ATTR_STRUCT.unpack(a)[0] if len(a) == _ATTR_SIZE else 0
            if mode and stat.S_IFMT(mode) not in _FILE_TYPES:
                return f"entry {base + i} of the listing ({shown[i]!r:.80}, mode {mode:#o})"
    return f"one of entries {base} to {base + len(names) - 1} of the listing"


_FILE_TYPES = {stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK, stat.S_IFCHR, stat.S_IFBLK,
               stat.S_IFIFO, stat.S_IFSOCK}
