"""Directory listing through the batch filler: sizes, both offset modes, readdirplus attributes,
errors mid-stream, generator clean-up, seeking."""
from __future__ import annotations

import ctypes
import errno
import gc
import logging
import os
import stat
import subprocess
import threading

import pytest

import pyfuse
from pyfuse import Attr, DirEntry, FuseError

FILE = stat.S_IFREG | 0o644


class Listing(pyfuse.Operations):
    """/d holds ``n`` files named f0000000...; ``mode`` picks how readdir yields them."""

    def __init__(self, n, mode="names", fail_after=None, name_len=8, as_list=False):
        self.n = n
        self.mode = mode
        self.as_list = as_list  # readdir returns a list (sliced by pyfuse) instead of a generator
        self.fail_after = fail_after
        self.name_len = name_len
        self.getattr_calls = 0
        self.readdir_calls = []
        self.closed = threading.Event()
        self.lock = threading.Lock()

    def name(self, i):
        return f"f{i:0{self.name_len - 1}d}"

    def getattr(self, path, fh):
        with self.lock:
            self.getattr_calls += 1
        if path in ("/", "/d"):
            return Attr(mode=stat.S_IFDIR | 0o755, nlink=2)
        return Attr(mode=FILE, size=1)

    def readdir(self, path, offset, fh, plus):
        self.readdir_calls.append((offset, plus))
        return list(self.entries(offset)) if self.as_list else self.entries(offset)

    def entries(self, offset):
        try:
            start = offset if self.mode in ("offsets", "tuples3") else 0
            for i in range(start, self.n):
                if self.fail_after is not None and i == self.fail_after:
                    raise FuseError(errno.EIO if i == 0 else errno.EBADMSG)
                if self.mode == "names":
                    yield self.name(i)
                elif self.mode == "attrs":
                    yield DirEntry(self.name(i), Attr(mode=FILE, size=i))
                elif self.mode == "tuples":
                    yield (self.name(i), Attr(mode=FILE, size=i))
                elif self.mode == "tuples3":
                    yield (self.name(i), Attr(mode=FILE, size=i), i + 1)
                elif self.mode == "offsets":
                    yield DirEntry(self.name(i), Attr(mode=FILE, size=i), offset=i + 1)
                elif self.mode == "mixed":
                    yield DirEntry(self.name(i), offset=(i + 1) if i % 2 else 0)
        finally:
            self.closed.set()


def names(n, length=8):
    return [f"f{i:0{length - 1}d}" for i in range(n)]


@pytest.mark.parametrize("as_list", [False, True], ids=["generator", "list"])
@pytest.mark.parametrize("n", [0, 1, 2, 127, 128, 1000, 5000])
@pytest.mark.parametrize("mode", ["names", "attrs", "offsets", "tuples", "tuples3"])
def test_sizes_and_modes(mount_ops, mnt, n, mode, as_list):
    mount_ops(Listing(n, mode, as_list=as_list))
    assert sorted(os.listdir(os.path.join(mnt, "d"))) == names(n)


# In-process clients stat with os.lstat(entry.path), never DirEntry.stat(): on Python 3.9-3.10
# DirEntry.stat() keeps the GIL during the system call, which then waits for a handler that
# needs that GIL (docs/testing.md). Same request for the kernel either way.


@pytest.mark.parametrize("mode", ["attrs", "tuples", "tuples3"])
def test_list_is_sliced_not_copied(mount_ops, mnt, mode):
    """A returned list is served a batch at a time (a list of DirEntry objects sliced; one of
    tuples stepped by C where pyfuse._pull is offered), and each entry goes out once across
    the requests; scandir sees readdirplus attributes from it."""
    ops = Listing(5000, mode, as_list=True)
    mount_ops(ops)
    with os.scandir(os.path.join(mnt, "d")) as it:
        sizes = [(e.name, os.lstat(e.path).st_size) for e in it]
    assert sizes == [(n, i) for i, n in enumerate(names(5000))]
    assert len(ops.readdir_calls) == 1


def test_hundred_thousand_entries(mount_ops, mnt):
    ops = Listing(100_000, "names")
    mount_ops(ops)
    got = os.listdir(os.path.join(mnt, "d"))
    assert len(got) == 100_000 and got == names(100_000)
    assert len(ops.readdir_calls) == 1  # one generator, streamed across all requests


def test_long_names(mount_ops, mnt):
    mount_ops(Listing(300, "attrs", name_len=255))
    assert sorted(os.listdir(os.path.join(mnt, "d"))) == names(300, 255)


def test_plus_attrs_spare_lookups(mount_ops, mnt):
    ops = Listing(1000, "attrs")
    mount_ops(ops)
    d = os.path.join(mnt, "d")
    os.stat(d)
    before = ops.getattr_calls
    sizes = {}
    with os.scandir(d) as it:
        for e in it:
            sizes[e.name] = os.lstat(e.path).st_size
    assert sizes == {n: i for i, n in enumerate(names(1000))}
    # readdirplus handed the attributes over: no getattr call per entry
    assert ops.getattr_calls - before < 10, ops.getattr_calls - before


@pytest.mark.parametrize("mode", ["tuples", "tuples3"])
def test_tuple_entries_carry_attrs(mount_ops, mnt, mode):
    mount_ops(Listing(300, mode))
    with os.scandir(os.path.join(mnt, "d")) as it:
        sizes = {e.name: os.lstat(e.path).st_size for e in it}
    assert sizes == {n: i for i, n in enumerate(names(300))}


def test_mixed_entry_kinds(mount_ops, mnt):
    class Mixed(Listing):
        def readdir(self, path, offset, fh, plus):
            return ["a", DirEntry("b"), ("c", Attr(mode=FILE)), b"d"]

    mount_ops(Mixed(0))
    assert sorted(os.listdir(os.path.join(mnt, "d"))) == ["a", "b", "c", "d"]


def test_bytes_names(mount_ops, mnt):
    """Names may be bytes (the raw name, not decoded), alone or mixed with str names."""
    class Raw(Listing):
        def readdir(self, path, offset, fh, plus):
            return [(b"a", Attr(mode=FILE, size=1)), (b"b\xff", Attr(mode=FILE, size=2)),
                    ("c", Attr(mode=FILE, size=3))]

    mount_ops(Raw(0))
    d = os.path.join(mnt, "d")
    with os.scandir(os.fsencode(d)) as it:
        assert sorted(e.name for e in it) == [b"a", b"b\xff", b"c"]
    assert sorted(os.listdir(d)) == ["a", "b\udcff", "c"]


@pytest.mark.parametrize("entries", [
    [("a", None), "bc"],                       # a 2-character name is not a (name, attr) pair
    ["bc", ("a", None)],
    [("a", Attr(mode=FILE)), DirEntry("bc")],  # tuples and DirEntry objects of two lengths
    [("a", None, 0), ("bc", Attr(mode=FILE))],
    # entries a zip of the batch takes apart (the fast split looks at no entry's type): their
    # characters land in the attribute, offset and inode columns, which refuse them, and the
    # batch is split again entry by entry
    [("a", Attr(mode=FILE)), "bc"],
    [("a", Attr(mode=FILE)), b"bc"],
    [("a", None, 0), "bcd"],
    [("a", Attr(mode=FILE), 0, 7), "bcde"],
])
def test_mixed_shapes(mount_ops, mnt, entries):
    class Mixed(Listing):
        def readdir(self, path, offset, fh, plus):
            return entries

    mount_ops(Mixed(0))
    expected = sorted(e if isinstance(e, str) else e.decode() if isinstance(e, bytes) else e[0]
                      for e in entries)
    assert sorted(os.listdir(os.path.join(mnt, "d"))) == expected


def test_dtype_from_attr(mount_ops, mnt):
    mount_ops(Listing(10, "attrs"))
    with os.scandir(os.path.join(mnt, "d")) as it:
        assert all(e.is_file(follow_symlinks=False) for e in it)


@pytest.mark.expect_errors
def test_error_before_first_entry(mount_ops, mnt):
    ops = Listing(10, "names", fail_after=0)
    mount_ops(ops)
    with pytest.raises(OSError) as ei:
        os.listdir(os.path.join(mnt, "d"))
    assert ei.value.errno == errno.EIO


# 3000: the error comes between requests; the others: while the batch that holds the last entries
# before it is still being handed to the kernel (8-byte names: 1,024 fit one 32 KiB buffer, 128
# one 4 KiB buffer), so some of them wait for the next request; 100 (of 5000 and of 200): while
# the listing's first batch is pulled (by Listings._first, which hands what was yielded on).
@pytest.mark.parametrize("n,fail_after", [(5000, 3000), (5000, 1100), (5000, 1024 + 128 + 100),
                                          (5000, 4 * 256 + 200), (5000, 100), (200, 100)])
def test_error_mid_stream_surfaces_on_next_request(mount_ops, mnt, n, fail_after):
    ops = Listing(n, "names", fail_after=fail_after)
    mount_ops(ops)
    seen = []
    with pytest.raises(OSError) as ei:
        with os.scandir(os.path.join(mnt, "d")) as it:
            for e in it:
                seen.append(e.name)
    assert ei.value.errno == errno.EBADMSG
    assert seen == names(fail_after)  # every entry before the error, none lost


@pytest.mark.expect_errors
def test_mixed_offsets_is_an_error(mount_ops, mnt, caplog):
    mount_ops(Listing(10, "mixed"))
    with pytest.raises(OSError) as ei:
        os.listdir(os.path.join(mnt, "d"))
    assert ei.value.errno == errno.EIO
    assert "mixed entries" in caplog.text


# Plain listings (readdirplus off) of 8-byte names: a whole batch (PYFUSE_READDIR_BATCH, 512
# entries) fits one kernel buffer, so the request goes on with the next batch (1000, 5000), or
# the batch ends the listing (512); an error as the second batch is pulled (fail_after 512) or
# after some of it (700) surfaces on the next request, every entry before it handed out.
@pytest.mark.parametrize("n,fail_after,as_list", [
    *((n, None, as_list) for n in (511, 512, 513, 1000, 5000) for as_list in (False, True)),
    (5000, 512, False), (5000, 700, False)])
def test_plain_listing_goes_on_after_a_whole_batch(mount_ops, mnt, n, fail_after, as_list):
    mount_ops(Listing(n, "names", fail_after=fail_after, as_list=as_list),
              config=pyfuse.Config(readdirplus="off"))
    seen = []
    if fail_after is None:
        with os.scandir(os.path.join(mnt, "d")) as it:
            seen = [e.name for e in it]
        assert seen == names(n)
        return
    with pytest.raises(OSError) as ei:
        with os.scandir(os.path.join(mnt, "d")) as it:
            for e in it:
                seen.append(e.name)
    assert ei.value.errno == errno.EBADMSG
    assert seen == names(fail_after)


@pytest.mark.expect_errors
@pytest.mark.parametrize("n", [10, 2000])
def test_refused_batch_closes_generator(mount_ops, mnt, caplog, n):
    """A listing refused in its first batch (mixed offsets) fails with EIO and its generator is
    closed at once (its finally: runs) though the filesystem still holds it; 2000: more than
    a batch, so the generator was not exhausted."""
    class Held(Listing):
        def readdir(self, path, offset, fh, plus):
            self.held = super().readdir(path, offset, fh, plus)
            return self.held

    ops = Held(n, "mixed")
    mount_ops(ops)
    with pytest.raises(OSError) as ei:
        os.listdir(os.path.join(mnt, "d"))
    assert ei.value.errno == errno.EIO
    assert "mixed entries" in caplog.text
    assert ops.closed.wait(5)


def test_abandoned_listing_closes_generator(mount_ops, mnt):
    ops = Listing(50_000, "names")
    mount_ops(ops)
    with os.scandir(os.path.join(mnt, "d")) as it:
        first = [next(it).name for _ in range(10)]
    assert first == names(10)
    assert ops.closed.wait(5)  # releasedir closed the kept generator: its finally ran


@pytest.mark.expect_errors
@pytest.mark.parametrize("bad", ["", "a/b", "x" * 256, "nul\0inside", 42])
def test_bad_names(mount_ops, mnt, bad, caplog):
    class Bad(Listing):
        def readdir(self, path, offset, fh, plus):
            return ["ok", bad]

    mount_ops(Bad(0))
    with pytest.raises(OSError) as ei:
        os.listdir(os.path.join(mnt, "d"))
    assert ei.value.errno == errno.EIO
    assert "readdir" in caplog.text


class _Dirent(ctypes.Structure):
    _fields_ = [("d_ino", ctypes.c_uint64), ("d_off", ctypes.c_int64),
                ("d_reclen", ctypes.c_ushort), ("d_type", ctypes.c_ubyte),
                ("d_name", ctypes.c_char * 256)]


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.opendir.restype = ctypes.c_void_p
    libc.opendir.argtypes = [ctypes.c_char_p]
    libc.readdir64.restype = ctypes.POINTER(_Dirent)
    libc.readdir64.argtypes = [ctypes.c_void_p]
    libc.telldir.restype = ctypes.c_long
    libc.telldir.argtypes = [ctypes.c_void_p]
    libc.seekdir.argtypes = [ctypes.c_void_p, ctypes.c_long]
    libc.rewinddir.argtypes = [ctypes.c_void_p]
    libc.closedir.argtypes = [ctypes.c_void_p]
    return libc


def _read(libc, d, k):
    out = []
    for _ in range(k):
        e = libc.readdir64(d)
        if not e:
            break
        out.append(e.contents.d_name.decode())
    return out


@pytest.mark.parametrize("as_list", [False, True], ids=["generator", "list"])
@pytest.mark.parametrize("mode", ["names", "tuples", "tuples3", "offsets"])
def test_telldir_seekdir_rewinddir(mount_ops, mnt, mode, as_list):
    mount_ops(Listing(3000, mode, as_list=as_list))
    libc = _libc()
    d = libc.opendir(os.path.join(mnt, "d").encode())
    assert d
    try:
        head = _read(libc, d, 1500)
        pos = libc.telldir(d)
        rest = _read(libc, d, 10)
        assert head + rest == names(1510)
        libc.seekdir(d, pos)
        assert _read(libc, d, 10) == rest
        libc.rewinddir(d)
        assert _read(libc, d, 5000) == names(3000)
    finally:
        libc.closedir(d)


def test_directory_changing_while_listed(mount_ops, mnt):
    from pyfuse.examples.memory import CONFIG, Memory

    mount_ops(Memory(), config=CONFIG)
    d = os.path.join(mnt, "d")
    os.mkdir(d)
    for i in range(2000):
        open(os.path.join(d, f"a{i}"), "w").close()
    seen = []
    with os.scandir(d) as it:
        for k, e in enumerate(it):
            seen.append(e.name)
            if k == 100:
                for i in range(100):
                    open(os.path.join(d, f"b{i}"), "w").close()
                for i in range(1500, 2000):
                    os.unlink(os.path.join(d, f"a{i}"))
    # no duplicates, nothing invented; entries that existed throughout are all there
    assert len(seen) == len(set(seen))
    assert {f"a{i}" for i in range(101)} <= set(seen)
    assert set(seen) <= {f"a{i}" for i in range(2000)} | {f"b{i}" for i in range(100)}


def test_one_python_call_per_kernel_request(mount_ops, mnt, caplog):
    """65,536 names: the kernel sends a few dozen READDIR requests (plain readdir: a names-only
    listing stays out of readdirplus), and each costs exactly one Python call."""
    caplog.set_level(logging.DEBUG, logger="pyfuse")
    ops = Listing(65536, "names")
    session = mount_ops(ops, debug=True)
    d = os.path.join(mnt, "d")
    os.stat(d)
    session._listings.requests = 0
    caplog.clear()
    assert len(os.listdir(d)) == 65536
    kernel = sum(1 for r in caplog.records if "opcode: READDIR" in r.getMessage())
    assert 0 < kernel < 400, kernel                     # batches, not entries
    assert kernel - 1 <= session._listings.requests <= kernel  # C answers the final EOF itself
    assert len(ops.readdir_calls) == 1


def test_ls_l_makes_no_per_entry_getattr(mount_ops, mnt):
    """Cold `ls -l` of a fresh 1,000-entry directory: the attributes come with readdirplus."""
    ops = Listing(1000, "attrs")
    mount_ops(ops)
    before = ops.getattr_calls
    out = subprocess.run(["ls", "-l", os.path.join(mnt, "d")], capture_output=True, text=True,
                         check=True).stdout
    assert out.count("\n") == 1001  # "total" plus 1,000 entries
    assert ops.getattr_calls - before <= 5, ops.getattr_calls - before


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@pytest.mark.rss
@pytest.mark.timeout(120)
def test_memory_bounded_by_batch(mount_ops, mnt):
    """A generator over 1,000,000 entries is listed in memory bounded by the batch, and
    repeated listings of 65,536 entries do not grow the daemon (here: this process)."""
    big = Listing(1_000_000, "names")
    mount_ops(big)
    d = os.path.join(mnt, "d")
    with os.scandir(d) as it:  # warm-up: allocator pools, the kernel's name cache
        for _ in zip(range(100_000), it):
            pass
    gc.collect()
    before = _rss_kib()
    count = 0
    with os.scandir(d) as it:
        for _ in it:
            count += 1
    gc.collect()
    grown = _rss_kib() - before
    assert count == 1_000_000
    assert grown < 8 * 1024, f"RSS grew by {grown} KiB"


class Prepared(Listing):
    """readdir returns one list built at start-up (what a filesystem serving a listing again and
    again would do)."""

    def __init__(self, n, mode):
        super().__init__(n, mode)
        self.prepared = list(self.entries(0))

    def readdir(self, path, offset, fh, plus):
        return self.prepared


@pytest.mark.rss
@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", [Listing, Prepared], ids=["generator", "prepared list"])
def test_repeated_listings_do_not_grow(mount_ops, mnt, kind):
    ops = kind(65536, "attrs")
    mount_ops(ops)
    d = os.path.join(mnt, "d")
    for _ in range(3):
        os.listdir(d)
    gc.collect()
    os.listdir(d)  # the first listing after a full collection takes 1-2 MiB of pools back
    before = _rss_kib()
    for _ in range(10):
        assert len(os.listdir(d)) == 65536
    gc.collect()
    assert _rss_kib() - before < 2 * 1024


@pytest.mark.parametrize("n", [2, 5000])
def test_offsets_ignored_by_the_filesystem_still_end(mount_ops, mnt, n):
    """A readdir that yields its own offsets but ignores the offset it is asked for would hand
    its first entries out again on every request after the end; the shim answers the end of a
    finished listing itself, so the listing ends (and, when it fits one kernel buffer, is
    exact)."""
    class Ignores(Listing):
        def readdir(self, path, offset, fh, plus):
            self.readdir_calls.append((offset, plus))
            return [DirEntry(self.name(i), Attr(mode=FILE), i + 1) for i in range(self.n)]

    ops = Ignores(n)
    mount_ops(ops)
    got = os.listdir(os.path.join(mnt, "d"))
    assert sorted(set(got)) == names(n)
    if n == 2:
        assert sorted(got) == names(2)


def _opcodes(caplog) -> list[str]:
    return [m.split("opcode: ")[1].split()[0] for m in (r.getMessage() for r in caplog.records)
            if "opcode: " in m]


def test_readdirplus_always_serves_find_ls_without_lookups(mount_ops, mnt, caplog):
    """find -ls reads the whole directory before it stats (fts): in the kernel's adaptive mode
    that is plain READDIR and then a LOOKUP per entry; readdirplus="always" hands out the
    attributes with the names."""
    ops = Listing(1000, "attrs")
    mount_ops(ops, config=pyfuse.Config(readdirplus="always"))
    os.stat(os.path.join(mnt, "d"))
    before = ops.getattr_calls
    out = subprocess.run(["find", os.path.join(mnt, "d"), "-ls"], capture_output=True,
                         text=True, check=True).stdout
    assert out.count("\n") == 1001
    assert ops.getattr_calls - before <= 3, ops.getattr_calls - before


def test_readdirplus_auto_lookups_for_find_ls(mount_ops, mnt):
    """The same find -ls in the default ("auto") mode: the kernel's adaptive mode costs a
    lookup per entry (this is what "always" is for)."""
    ops = Listing(1000, "attrs")
    mount_ops(ops)
    os.stat(os.path.join(mnt, "d"))
    before = ops.getattr_calls
    subprocess.run(["find", os.path.join(mnt, "d"), "-ls"], capture_output=True, check=True)
    assert ops.getattr_calls - before > 500, ops.getattr_calls - before


@pytest.mark.parametrize("mode", ["auto", "always", "off"])
def test_readdirplus_modes_names_only(mount_ops, mnt, caplog, mode):
    """A names-only listing (os.listdir of 1,000 entries, several requests): in "auto" the
    kernel asks for attributes with the first request only (where the listing starts) and the
    rest is plain READDIR; in "always" every request is READDIRPLUS; in "off" none, and not for
    `ls -l` either."""
    caplog.set_level(logging.DEBUG, logger="pyfuse")
    ops = Listing(1000, "attrs")
    mount_ops(ops, debug=True, config=pyfuse.Config(readdirplus=mode))
    d = os.path.join(mnt, "d")
    os.stat(d)
    caplog.clear()
    os.listdir(d)
    seen = [o for o in _opcodes(caplog) if o.startswith("READDIR")]
    plus, plain = seen.count("READDIRPLUS"), seen.count("READDIR")
    assert len(seen) >= 2, seen
    if mode == "auto":
        assert plus <= 1 and plain >= 1, seen
    elif mode == "always":
        assert plain == 0, seen
    else:
        assert plus == 0, seen
    if mode == "off":
        caplog.clear()
        subprocess.run(["ls", "-l", d], capture_output=True, check=True)
        assert "READDIRPLUS" not in _opcodes(caplog)


def test_readdirplus_config_is_checked():
    with pytest.raises(ValueError, match="readdirplus must be 'auto', 'always' or 'off'"):
        pyfuse.Config(readdirplus="sometimes")
