"""pyfuse._pull (csrc/cpython/pull.c): a listing's batch of the docs' (name, attr) tuples pulled
from the filesystem's iterator and packed in C, and the readdir engine's use of it
(pyfuse._core.batch.pull): the same listings, the same errors, as the batches Python packs."""
from __future__ import annotations

import ctypes
import errno
import logging
import os
import stat
import sys

import pytest
from test_readdir import _opcodes  # noqa: E402

import pyfuse
import pyfuse.lowlevel as ll
from pyfuse import Attr, DirEntry, FuseError, _pull
from pyfuse._core import batch as B
from pyfuse._core.convert import pack_attr
from pyfuse._pyfuse_c import lib

FILE = stat.S_IFREG | 0o644
needs_pull = pytest.mark.skipif(not _pull.available, reason="pyfuse._pull needs Python 3.10")


def gen(n, attr, start=0):
    for i in range(start, n):
        yield f"f{i:05d}", attr


@pytest.mark.nofuse
def test_offered_from_python_3_10():
    assert bool(_pull.available) == (sys.version_info >= (3, 10))
    assert (B.PULL is None) == (sys.version_info < (3, 10))
    assert _pull.MAX_BATCH == lib.PYFUSE_READDIR_BATCH


@needs_pull
@pytest.mark.nofuse
def test_pulls_and_packs_the_docs_entries():
    a = Attr(mode=FILE, size=1)
    it = gen(10, a)
    blob, k, shared, attrs, offs, inos, rest, err = _pull.pull(it, 4)
    assert (blob, k, shared, attrs, offs, inos, rest, err) == (
        b"f00000\0f00001\0f00002\0f00003", 4, 1, a, None, None, None, None)
    assert next(it) == ("f00004", a)  # the iterator goes on after the batch
    assert _pull.pull(it, 512)[:3] == (b"\0".join(b"f%05d" % i for i in range(5, 10)), 5, 1)
    assert _pull.pull(it, 512) == (b"", 0, 1, None, None, None, None, None)  # exhausted


@needs_pull
@pytest.mark.nofuse
def test_attrs_of_their_own():
    a, b = Attr(mode=FILE, size=1), Attr(mode=FILE, size=2)
    _, k, flags, attrs, *_ = _pull.pull(iter([("x", a), ("y", a), ("z", b)]), 512)
    assert B.ATTRS_IN_C  # Attr's layout as ctypes keeps it: checked when the engine loads
    # each Attr's bytes, copied as it was pulled (k of them)
    assert (k, flags, attrs) == (3, _pull.PACKED, bytes(a) * 2 + bytes(b))
    c = Attr(mode=FILE, size=3)
    _, k, flags, attrs, *_ = _pull.pull(iter([("x", a), ("y", b), ("z", c)]), 512)
    assert (k, flags, attrs) == (3, _pull.PACKED, bytes(a) + bytes(b) + bytes(c))


class SubAttr(Attr):
    """A filesystem's own Attr (its bytes are Attr's, as ctypes lays a subclass out)."""

    extra = "kept"


@needs_pull
@pytest.mark.nofuse
@pytest.mark.parametrize("n", [3, 32, 33, 512, 600])
def test_attrs_packed_in_c_as_they_come(n):
    """Batches on the stack's buffer (up to 32 attrs) and beyond it, full and part-full, of
    Attrs and of a subclass's: each entry's bytes, in order."""
    attrs = [(SubAttr if i % 7 == 3 else Attr)(mode=FILE, ino=i + 2, size=i) for i in range(n)]
    want = b"".join(bytes(Attr(mode=FILE, ino=i + 2, size=i)) for i in range(min(n, 512)))
    _, k, flags, packed, *_ = _pull.pull(((f"f{i:05d}", a) for i, a in enumerate(attrs)), 512)
    assert (k, flags, packed) == (min(n, 512), _pull.PACKED, want)
    b, entries, err, ended = B.pull(iter([(f"g{i}", Attr(mode=FILE, size=i)) for i in range(n)]),
                                    512, B.UNKNOWN)
    assert (b.stride, b.n, entries, err, ended) == (_pull.ATTR_SIZE, min(n, 512), [], None,
                                                    n < 512)
    assert b.attrs == b"".join(bytes(Attr(mode=FILE, size=i)) for i in range(min(n, 512)))


@needs_pull
@pytest.mark.nofuse
@pytest.mark.parametrize("other", [None, pack_attr(Attr(mode=FILE, size=9)), "not an attr"])
def test_attrs_that_are_not_attr_objects_come_back_as_objects(other):
    """An entry whose attr is not an Attr ends the packing (not the pull): the batch's attrs
    come back as the objects, for Python to pack (or to refuse) as before."""
    a = [Attr(mode=FILE, size=i) for i in range(40)]
    items = [(f"f{i}", a[i]) for i in range(40)] + [("x", other), ("y", a[0])]
    _, k, flags, attrs, *_ = _pull.pull(iter(items), 512)
    assert (k, flags, attrs) == (42, 0, (*a, other, a[0]))
    # packed, then an entry C does not take: the objects, for the entries Python rebuilds
    items = [(f"f{i}", a[i]) for i in range(40)] + [DirEntry("d"), ("y", a[0])]
    b, entries, err, ended = B.pull(iter(items), 512, B.UNKNOWN)
    assert b is None and entries == items and err is None and ended
    assert all(x[1] is y[1] for x, y in zip(entries, items))


@needs_pull
@pytest.mark.nofuse
def test_attr_layout_is_checked_before_it_is_used():
    """use_attr trusts ctypes' layout only if a probe's bytes are where addressof says; a
    wrong address (or size) turns the packing off, and pull hands the objects back."""
    import ctypes
    probe = Attr()
    try:
        assert not _pull.use_attr(Attr, probe, ctypes.addressof(probe) + 8, ctypes.sizeof(Attr))
        a, b = Attr(mode=FILE, size=1), Attr(mode=FILE, size=2)
        assert _pull.pull(iter([("x", a), ("y", b)]), 512)[2:4] == (0, (a, b))
        assert not _pull.use_attr(Attr, probe, ctypes.addressof(probe), 8)
        with pytest.raises(TypeError):
            _pull.use_attr(Attr, "not an Attr", 0, ctypes.sizeof(Attr))
    finally:
        assert _pull.use_attr(Attr, probe, ctypes.addressof(probe), ctypes.sizeof(Attr))
    assert _pull.pull(iter([("x", a), ("y", b)]), 512)[2:4] == (_pull.PACKED,
                                                                bytes(a) + bytes(b))


@needs_pull
@pytest.mark.nofuse
def test_offsets():
    items = [("a", None, 5), ("b", None), ("c", None, -1), ("d", None, (1 << 63) - 1)]
    blob, k, _, _, offs, _, rest, err = _pull.pull(iter(items), 512)
    assert (blob, k, rest, err) == (b"a\0b\0c\0d", 4, None, None)
    assert list(memoryview(offs).cast("q")) == [5, 0, -1, (1 << 63) - 1]  # C's filler judges
    assert _pull.pull(iter([("a", None, 0), ("b", None)]), 512)[4] is None  # positional
    b, _, _, _ = B.pull(iter(items[:1]), 512, B.UNKNOWN)
    assert (list(b.offs), b.offs_c) == ([5], (5).to_bytes(8, sys.byteorder))
    with pytest.raises(Exception, match="changed between positional"):
        B.pull(iter(items[:1]), 512, B.POSITIONAL)
    with pytest.raises(Exception, match="changed between positional"):
        B.pull(iter(items[1:2]), 512, B.OFFSETS)


@needs_pull
@pytest.mark.nofuse
def test_bytes_names_and_inode_numbers():
    a = Attr(mode=FILE)
    blob, k, flags, _, offs, inos, rest, _ = _pull.pull(
        iter([(b"a\xff", a, 0, 7), ("b", a, 0, (1 << 64) - 1)]), 512)
    assert (blob, k, flags, offs, rest) == (b"a\xff\0b", 2, _pull.SHARED, None, None)
    assert list(memoryview(inos).cast("Q")) == [7, (1 << 64) - 1]
    # as Python packs them: a batch of 4-tuples keeps its inode numbers, even 0s; a mixed
    # one only if one is not 0
    assert _pull.pull(iter([("a", a, 0, 0)]), 512)[5] == bytes(8)
    assert _pull.pull(iter([("a", a, 0, 0), ("b", a)]), 512)[5] is None
    assert _pull.pull(iter([("a", a, 0, 9), ("b", a)]), 512)[5] == \
        (9).to_bytes(8, sys.byteorder) + bytes(8)
    b, *_ = B.pull(iter([("a", a, 0, 9)]), 512, B.UNKNOWN)
    assert (list(b.inos), b.inos_c) == ([9], (9).to_bytes(8, sys.byteorder))
    # bytes names stay bytes: in an error message, and when Python packs the batch
    assert _pull.pull(iter([(b"a", a), (b"b", a)]), 512)[2] == _pull.SHARED | _pull.BYTES
    b, *_ = B.pull(iter([(b"a", a), (b"b", a)]), 512, B.UNKNOWN)
    assert b.names_of() == [b"a", b"b"] and b.rest(1).names_of() == [b"b"]
    _, entries, _, _ = B.pull(iter([(b"a", a, 0, 9), DirEntry("c")]), 512, B.UNKNOWN)
    assert entries == [(b"a", a, 0, 9), DirEntry("c")]
    with pytest.raises(Exception, match="without an attr"):
        B.pull(iter([("a", None, 0, 9)]), 512, B.UNKNOWN)


@needs_pull
@pytest.mark.nofuse
@pytest.mark.parametrize("bad", [
    ("", None), ("a/b", None), ("x" * 256, None), ("nul\0inside", None),  # refused names
    ("b\udcff", None),                     # a non-UTF-8 name os.fsdecode made: Python encodes it
    ("f00001", None),                      # the same name twice in the batch
    (b"", None), (b"a/b", None), (42, None), ("c", None, "3"), ("c", None, 1 << 63),
    ("c", None, True), ("c", None, 3, -4), ("c", None, 3, 1 << 64), ("c", None, 3, 4, 5),
    DirEntry("d"), "e", ["f", None],  # other shapes, offsets and inode numbers
])
def test_stops_at_an_entry_it_does_not_take(bad):
    items = [("f00000", None), ("f00001", None), bad, ("after", None), ("more", None)]
    it = iter(items)
    blob, k, shared, attrs, offs, inos, rest, err = _pull.pull(it, 4)
    assert (blob, k, shared, attrs, offs, inos, err) == (
        b"f00000\0f00001", 2, 1, None, None, None, None)
    assert rest == [bad, ("after", None)] and rest[0] is bad  # the rest of the batch, raw
    assert next(it) == ("more", None)
    if bad != ("f00001", None):  # (alone, that one is no duplicate)
        assert _pull.pull(iter([bad, ("x", None)]), 512) == (
            b"", 0, 1, None, None, None, [bad, ("x", None)], None)


@needs_pull
@pytest.mark.nofuse
@pytest.mark.parametrize("length", range(1, 42))
def test_every_byte_of_a_name_is_checked(length):
    """csrc/names.h reads a name a word at a time (its last word overlapping the one before,
    a short name as overlapping halves or as three bytes): a '/' or NUL at any position of
    a name of any length stops the pull at that entry; names alike but for one byte are all
    taken, and a name twice is not."""
    for pos in range(length):
        for bad in ("/", "\0"):
            name = "x" * pos + bad + "x" * (length - pos - 1)
            assert _pull.pull(iter([("ok", None), (name, None)]), 512)[1] == 1, (name, pos)
    alike = ["x" * length] + ["x" * pos + "y" + "x" * (length - pos - 1)
                              for pos in range(length)]
    alike += ["x" * pos + "\x01" + "x" * (length - pos - 1) for pos in range(length)]
    alike = list(dict.fromkeys(alike))
    entries = [(n, None) for n in alike]
    blob, k, *_ = _pull.pull(iter(entries), 512)
    assert k == len(alike) and blob == "\0".join(alike).encode()
    assert _pull.pull(iter([*entries, (alike[-1], None)]), 512)[1] == len(alike)  # the repeat


@needs_pull
@pytest.mark.nofuse
def test_long_names_outgrow_the_stack_buffer():
    entries = [(f"{i:03d}" + "n" * 252, None) for i in range(512)]  # 128 KiB of names
    blob, k, *_ = _pull.pull(iter(entries), 512)
    assert k == 512 and blob == "\0".join(n for n, _ in entries).encode()


@needs_pull
@pytest.mark.nofuse
def test_the_iterators_error_is_handed_back():
    def failing():
        yield "a", None
        raise FuseError(errno.EBADMSG)

    blob, k, _, _, _, _, rest, err = _pull.pull(failing(), 512)
    assert (blob, k, rest) == (b"a", 1, None)
    assert isinstance(err, FuseError) and err.__traceback__ is not None

    def failing_later():
        yield "a", None
        yield "b", None, 3, -4
        yield "c", None
        raise FuseError(errno.EBADMSG)

    blob, k, _, _, _, _, rest, err = _pull.pull(failing_later(), 512)
    assert (blob, k, rest) == (b"a", 1, [("b", None, 3, -4), ("c", None)])
    assert isinstance(err, FuseError)
    with pytest.raises(ValueError):
        _pull.pull(iter([]), 0)
    with pytest.raises(ValueError):
        _pull.pull(iter([]), _pull.MAX_BATCH + 1)


@needs_pull
@pytest.mark.nofuse
def test_no_reference_is_leaked():
    a = Attr(mode=FILE)
    name = "kept"
    before = sys.getrefcount(a), sys.getrefcount(name)
    for _ in range(100):
        _pull.pull(iter([(name, a), ("x", a)]), 512)
        _pull.pull(iter([(name, a), ("y", Attr())]), 512)
        _pull.pull(iter([(name, a), ("y", Attr()), ("z", None)]), 512)  # packed, then not
        _pull.pull(iter([(f"{name}{i}", Attr()) for i in range(40)] + [(name, a)]), 512)
        _pull.pull(iter([(name, a), (name, a)]), 512)  # stops at the second
    assert (sys.getrefcount(a), sys.getrefcount(name)) == before


@needs_pull
@pytest.mark.nofuse
def test_engine_batch_of_the_fast_path():
    a = Attr(mode=FILE, size=3)
    b, entries, err, ended = B.pull(gen(600, a), 512, B.UNKNOWN)
    assert entries == [] and err is None and not ended
    assert (b.n, b.checked, b.stride, b.attrs, b.offs) == (512, True, 0, pack_attr(a), None)
    assert b.names_of() == [f"f{i:05d}" for i in range(512)]
    r = b.rest(500)
    assert (r.n, r.checked, r.names_of()) == (12, True, [f"f{i:05d}" for i in range(500, 512)])
    b, entries, err, ended = B.pull(gen(600, a, 512), 512, B.POSITIONAL)
    assert b.n == 88 and ended


@needs_pull
@pytest.mark.nofuse
def test_engine_falls_back_with_every_entry_pulled():
    a = Attr(mode=FILE)
    items = [("a", a), ("b", a), DirEntry("c"), ("d", a), ("e", a)]
    it = iter(items)
    b, entries, err, ended = B.pull(it, 4, B.UNKNOWN)
    assert b is None and entries == items[:4] and err is None and not ended
    assert list(it) == items[4:]

    def failing():
        yield "a", a
        raise FuseError(errno.EBADMSG)

    b, entries, err, ended = B.pull(failing(), 512, B.UNKNOWN)
    assert b is None and entries == [("a", a)] and isinstance(err, FuseError) and ended
    b, entries, err, ended = B.pull(iter([DirEntry("a"), ("b", a)]), 512, B.UNKNOWN)
    assert b is None and entries == [DirEntry("a"), ("b", a)] and err is None and ended

    def interrupted():
        yield "a", a
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        B.pull(interrupted(), 512, B.UNKNOWN)
    with pytest.raises(Exception, match="invalid attr"):
        B.pull(iter([("a", "not an attr")]), 512, B.UNKNOWN)


# Through a mount: listings of the docs' tuples that change shape, or go wrong, part way
# through a batch (C packs the entries before, Python the batch from there on).

class Listing(pyfuse.Operations):
    """/d, listed by the subclass's readdir; a file's getattr says size 1, so a size seen
    otherwise came with the listing (readdirplus)."""

    def getattr(self, path, fh):
        if path in ("/", "/d"):
            return Attr(mode=stat.S_IFDIR | 0o755, nlink=2)
        return Attr(mode=FILE, size=1)


class Failing(Listing):
    """The docs' tuples, f0000000 (size 0) on, until entry ``fail_after`` raises EBADMSG."""

    def __init__(self, fail_after):
        self.fail_after = fail_after

    def readdir(self, path, offset, fh, plus):
        for i in range(5000):
            if i == self.fail_after:
                raise FuseError(errno.EBADMSG)
            yield f"f{i:07d}", Attr(mode=FILE, size=i)

def _listed(mnt):
    with os.scandir(os.path.join(mnt, "d")) as it:
        return {e.name: os.lstat(e.path).st_size for e in it}


@pytest.mark.parametrize("odd", [
    lambda i: DirEntry(f"f{i:05d}", Attr(mode=FILE, size=i)),
    lambda i: (f"f{i:05d}".encode(), Attr(mode=FILE, size=i)),
    lambda i: (f"f{i:05d}", Attr(mode=FILE, size=i), False),  # an offset C leaves to Python
], ids=["DirEntry", "bytes name", "bool offset"])
@pytest.mark.parametrize("as_list", [False, True], ids=["generator", "list"])
def test_a_listing_that_changes_shape(mount_ops, mnt, odd, as_list):
    """A listing of the docs' tuples with other shapes among them (a returned list is pulled
    by C too, since its first entry is a tuple): C hands each batch back to Python at the
    odd entry, and every entry is listed with its attributes."""
    def entries():
        for i in range(2000):
            yield odd(i) if i % 700 == 300 else (f"f{i:05d}", Attr(mode=FILE, size=i))

    class Changing(Listing):
        def readdir(self, path, offset, fh, plus):
            return list(entries()) if as_list else entries()

    mount_ops(Changing())
    assert _listed(mnt) == {f"f{i:05d}": i for i in range(2000)}


def test_non_utf8_names_among_the_docs_entries(mount_ops, mnt):
    class Raw(Listing):
        def readdir(self, path, offset, fh, plus):
            yield "a", Attr(mode=FILE, size=1)
            yield "b\udcff", Attr(mode=FILE, size=2)  # os.fsdecode(b"b\xff")
            yield "c", Attr(mode=FILE, size=3)

    mount_ops(Raw())
    with os.scandir(os.fsencode(os.path.join(mnt, "d"))) as it:
        assert sorted(e.name for e in it) == [b"a", b"b\xff", b"c"]


@pytest.mark.expect_errors
def test_a_duplicate_is_named_as_before(mount_ops, mnt, caplog):
    class Twice(Listing):
        def readdir(self, path, offset, fh, plus):
            for i in range(100):
                yield f"f{min(i, 41):05d}", Attr(mode=FILE)

    mount_ops(Twice())
    with pytest.raises(OSError) as ei:
        os.listdir(os.path.join(mnt, "d"))
    assert ei.value.errno == errno.EIO
    assert "readdir yielded the same name twice: entry 42 of the listing ('f00041')" \
        in caplog.text


@pytest.mark.expect_errors
def test_a_bad_attr_is_named(mount_ops, mnt, caplog):
    class BadAttr(Listing):
        def readdir(self, path, offset, fh, plus):
            yield "a", Attr(mode=FILE)
            yield "b", "not an attr"

    mount_ops(BadAttr())
    with pytest.raises(OSError) as ei:
        os.listdir(os.path.join(mnt, "d"))
    assert ei.value.errno == errno.EIO
    assert "readdir yielded an invalid attr" in caplog.text


@pytest.mark.parametrize("fail_after", [100, 1100, 3000])
def test_an_error_mid_listing_surfaces_on_the_next_request(mount_ops, mnt, fail_after):
    mount_ops(Failing(fail_after))
    seen = []
    with pytest.raises(OSError) as ei:
        with os.scandir(os.path.join(mnt, "d")) as it:
            for e in it:
                seen.append((e.name, os.lstat(e.path).st_size))
    assert ei.value.errno == errno.EBADMSG
    assert seen == [(f"f{i:07d}", i) for i in range(fail_after)]  # none lost, each its attr


@needs_pull
@pytest.mark.expect_errors
@pytest.mark.parametrize("name", [
    "", "/", "a/b", "nul\0inside", "x" * 255, "x" * 256, "é" * 127, "é" * 128, ".", "..",
    "b\udcff", b"raw\xff", b"a/b", "ok",  # "ok": the same name twice
    "abcdefg/", "abcdefgh/", "/abcdefghijklmno", "abcdefghijklmn\0", "abc\0", "ab/",
])
def test_c_and_the_filler_refuse_the_same_names(mount_ops, mnt, name):
    """pull.c checks names as csrc/readdir.c's check_names does (a batch C packed skips that
    check): a listing of ["ok", name] served as DirEntry objects (Python packs them, the
    filler checks them) and as tuples (C pulls them) ends the same way."""
    class Both(Listing):
        def readdir(self, path, offset, fh, plus):
            if path == "/d":
                return [DirEntry("ok", Attr(mode=FILE)), DirEntry(name, Attr(mode=FILE))]
            return iter([("ok", Attr(mode=FILE)), (name, Attr(mode=FILE))])

        def getattr(self, path, fh):
            if path in ("/", "/d", "/g"):
                return Attr(mode=stat.S_IFDIR | 0o755, nlink=2)
            return Attr(mode=FILE, size=1)

    mount_ops(Both())
    seen = []
    for d in ("d", "g"):
        try:
            seen.append(sorted(os.listdir(os.fsencode(os.path.join(mnt, d)))))
        except OSError as e:
            seen.append(e.errno)
    assert seen[0] == seen[1]
    if name in ("", "/", "a/b", "nul\0inside", "x" * 256, "é" * 128, b"a/b", "ok",
                "abcdefg/", "abcdefgh/", "/abcdefghijklmno", "abcdefghijklmn\0", "abc\0", "ab/"):
        assert seen[0] == errno.EIO  # refused: the listing fails
    else:
        assert isinstance(seen[0], list)  # taken: the listing is served


# What a plain READDIR's batch left over can reach a READDIRPLUS of the same listing (the
# kernel's adaptive mode asks for attributes again once the reader looks a name up): those
# entries go there with their attributes.

def _getdents(fd, size=4096):
    """One getdents64(2) of ``fd`` (one READDIR or READDIRPLUS request of ``size`` bytes):
    its entries as (name, d_ino, d_type)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.getdents64.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
    libc.getdents64.restype = ctypes.c_ssize_t
    buf = ctypes.create_string_buffer(size)
    n = libc.getdents64(fd, buf, size)
    if n < 0:
        raise OSError(ctypes.get_errno(), "getdents64")
    out, raw, at = [], buf.raw, 0
    while at < n:  # struct linux_dirent64: d_ino, d_off, d_reclen (u16), d_type (u8), name
        reclen = int.from_bytes(raw[at + 16:at + 18], "little")
        name = raw[at + 19:at + reclen].split(b"\0", 1)[0].decode()
        out.append((name, int.from_bytes(raw[at:at + 8], "little"), raw[at + 18]))
        at += reclen
    return out


def _mixed_name(i):
    """Short names first (beyond the listing's first batch, which READDIRPLUS pulls), then
    long ones: the engine sizes a batch by the entries the last full request took, so the
    first batch of long names is more than a request holds."""
    return f"s{i:04d}" if i < 600 else f"l{i:04d}" + "x" * 120


MIXED = 900


def _mixed_index(name):
    return int(name[1:5])


class MixedPath(Listing):
    def getattr(self, path, fh):
        if path in ("/", "/d"):
            return Attr(mode=stat.S_IFDIR | 0o755, nlink=2)
        i = _mixed_index(os.path.basename(path))
        return Attr(mode=FILE, ino=1000 + i, size=i)

    def readdir(self, path, offset, fh, plus):
        return ((_mixed_name(i), Attr(mode=FILE, ino=1000 + i, size=i)) for i in range(MIXED))


class MixedInode(ll.Operations):
    """The same listing as the root of an inode-API filesystem."""

    def lookup(self, parent, name):
        i = _mixed_index(name)
        if parent != 1 or not 0 <= i < MIXED or name != _mixed_name(i):
            raise FuseError(errno.ENOENT)
        return Attr(mode=FILE, ino=1000 + i, size=i)

    def getattr(self, ino, fh):
        if ino == 1:
            return Attr(mode=stat.S_IFDIR | 0o755, ino=1, nlink=2)
        return Attr(mode=FILE, ino=ino, size=ino - 1000)

    def readdir(self, ino, offset, fh, plus):
        return ((_mixed_name(i), Attr(mode=FILE, ino=1000 + i, size=i)) for i in range(MIXED))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("api", ["path", "inode"])
def test_a_plain_batch_left_over_for_a_readdirplus(mount_ops, mnt, caplog, api):
    """A listing read a request at a time (getdents64 of 4 KiB): READDIRPLUS at its start,
    plain READDIR after, then, once the reader looks up a name the listing has not reached,
    READDIRPLUS again, which gets what the last plain batch left over. Every entry is listed
    once with its type and inode, and every stat after is right; the inode API's READDIRPLUS
    gives each entry's attributes (one lookup counted for each; a batch that kept only what a
    plain READDIR sends would have sent them bare)."""
    caplog.set_level(logging.DEBUG, logger="pyfuse")
    s = mount_ops(MixedPath() if api == "path" else MixedInode(), debug=True)
    d = mnt if api == "inode" else os.path.join(mnt, "d")
    os.stat(d)
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    seen, bare = [], None
    try:
        caplog.clear()
        while True:
            got = _getdents(fd)
            seen += got
            if not got:
                break
            if bare is None and any(n.startswith("l") for n, _, _ in got):
                # a name not listed yet: its LOOKUP makes the next request a READDIRPLUS
                held = s.lookups_held()[1] if api == "inode" else 0
                os.stat(os.path.join(d, _mixed_name(MIXED - 1)))
                plus = _getdents(fd)
                seen += plus
                # each entry sent with attributes counts one lookup (and the stat's)
                bare = len(plus) + 1 - (s.lookups_held()[1] - held) if api == "inode" else 0
    finally:
        os.close(fd)
    ops = [o for o in _opcodes(caplog) if o.startswith("READDIR")]
    assert "READDIR" in ops and ops.index("READDIRPLUS", ops.index("READDIR")) > 0, ops
    names = [n for n, _, _ in seen if n not in (".", "..")]
    assert names == [_mixed_name(i) for i in range(MIXED)]
    assert all(t == 8 for n, _, t in seen if n not in (".", "..")), seen  # DT_REG
    if api == "inode":
        assert [ino for n, ino, _ in seen if n not in (".", "..")] == \
            [1000 + i for i in range(MIXED)]
        assert bare == 0  # the plain batch's rest went with its attributes
    for i in range(MIXED):
        st = os.stat(os.path.join(d, _mixed_name(i)))
        assert (st.st_size, stat.S_IFMT(st.st_mode)) == (i, stat.S_IFREG), _mixed_name(i)
