"""The data path on real mounts: byte-exact round trips, mmap, O_DIRECT, O_APPEND, concurrency,
zero-copy (FdRange, write_fd, splice), request sizes, and the threading model."""
from __future__ import annotations

import array
import errno
import hashlib
import mmap
import os
import random
import shutil
import subprocess
import threading
import time
from typing import Any, Optional

import pytest

import pyfuse
from pyfuse import Attr, FdRange, FileInfo, FuseError

MiB = 1 << 20
# sizes around the page, readahead (128 KiB) and largest-request (1 MiB) boundaries
SIZES = [0, 1, 4095, 4096, 4097, 131071, 131072, 131073, MiB - 1, MiB, MiB + 1, 3 * MiB + 123]


@pytest.fixture
def passthrough_fs(example: Any, tmp_path: Any) -> tuple[str, str, Any]:
    mnt, src = tmp_path / "mnt", tmp_path / "src"
    mnt.mkdir()
    src.mkdir()
    proc = example("passthrough", str(src), mountpoint=str(mnt))
    return str(mnt), str(src), proc


def _reread(path: str) -> bytes:
    """The whole file through a fresh open (FUSE drops the page cache on open)."""
    with open(path, "rb") as f:
        return f.read()


@pytest.mark.timeout(120)
def test_random_round_trips(data_fs: str) -> None:
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    model = bytearray()
    path = os.path.join(data_fs, "f")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        for _ in range(60):
            size = rng.choice(SIZES) if rng.random() < 0.7 else rng.randrange(1, 300_000)
            page = rng.randrange(0, 2048) * 4096
            off = rng.choice([0, len(model), rng.randrange(0, len(model) + 1), page,
                              page + rng.choice([-1, 1]) if page else 1, rng.randrange(8 * MiB)])
            data = rng.randbytes(size)
            assert os.pwrite(fd, data, off) == size, f"seed {seed}"
            if off > len(model) and size:  # (an empty write does not extend a file)
                model.extend(bytes(off - len(model)))  # a hole reads as zeros
            model[off:off + size] = data
            r_off = rng.randrange(0, len(model) + 2)
            r_size = rng.choice(SIZES)
            assert os.pread(fd, r_size, r_off) == bytes(model[r_off:r_off + r_size]), \
                f"seed {seed}"
    finally:
        os.close(fd)
    assert os.stat(path).st_size == len(model), f"seed {seed}"
    assert _reread(path) == model, f"seed {seed}"
    assert os.pread(os.open(path, os.O_RDONLY), 10, len(model) + 5) == b""  # past the end


def test_short_and_empty_reads(data_fs: str) -> None:
    path = os.path.join(data_fs, "f")
    with open(path, "wb") as f:
        f.write(b"0123456789")
    with open(path, "rb", buffering=0) as f:
        assert f.read(100) == b"0123456789"
        assert f.read(100) == b""
        assert os.pread(f.fileno(), 4, 8) == b"89"


def test_sparse_file_over_4_gib(passthrough_fs: tuple[str, str, Any]) -> None:
    mnt, src, _ = passthrough_fs
    path = os.path.join(mnt, "big")
    far = 5 * (1 << 30) - 100  # straddles 5 GiB: 64-bit offsets all the way through
    data = os.urandom(MiB + 3)
    with open(path, "wb") as f:
        f.write(b"head")
        assert os.pwrite(f.fileno(), data, far) == len(data)
    assert os.stat(path).st_size == far + len(data)
    assert os.stat(os.path.join(src, "big")).st_size == far + len(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert os.pread(fd, len(data), far) == data
        assert os.pread(fd, 4096, 1 << 32) == bytes(4096)  # the hole
        assert os.pread(fd, 4, 0) == b"head"
    finally:
        os.close(fd)


@pytest.mark.timeout(60)
def test_mmap_reads_and_writes(data_fs: str) -> None:
    path = os.path.join(data_fs, "m")
    content = bytearray(os.urandom(3 * MiB + 5))
    with open(path, "wb") as f:
        f.write(content)
    rng = random.Random(1)
    with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
        assert m[:] == content  # mmap read
        for _ in range(200):
            i = rng.randrange(len(content) - 8)
            chunk = os.urandom(8)
            m[i:i + 8] = chunk  # mmap write
            content[i:i + 8] = chunk
        m.flush()
    assert _reread(path) == content


def _aligned(size: int) -> mmap.mmap:
    return mmap.mmap(-1, size)  # page-aligned, as O_DIRECT wants


def test_o_direct(data_fs: str) -> None:
    path = os.path.join(data_fs, "d")
    data = os.urandom(2 * MiB)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o644)
    try:
        buf = _aligned(len(data))
        buf[:] = data
        assert os.pwritev(fd, [buf], 0) == len(data)
        back = _aligned(len(data))
        assert os.preadv(fd, [back], 0) == len(data)
        assert back[:] == data
        part = _aligned(4096)
        assert os.preadv(fd, [part], MiB) == 4096
        assert part[:] == data[MiB:MiB + 4096]
    finally:
        os.close(fd)
    assert _reread(path) == data


def test_o_append(data_fs: str) -> None:
    path = os.path.join(data_fs, "a")
    with open(path, "wb") as f:
        f.write(b"start-")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    other = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, b"one-")
        os.pwrite(other, b"S", 0)  # not appending: overwrites in place
        os.write(fd, b"two-" * 40_000)  # a large append spans several requests
        os.write(fd, b"three")
    finally:
        os.close(fd)
        os.close(other)
    assert _reread(path) == b"Start-one-" + b"two-" * 40_000 + b"three"


@pytest.mark.timeout(120)
def test_concurrent_readers_and_writers(data_fs: str) -> None:
    errors: list[BaseException] = []
    chunk = 64 * 1024
    shared = os.path.join(data_fs, "shared")
    with open(shared, "wb") as f:
        f.truncate(8 * 16 * chunk)

    def own_file(k: int) -> None:  # a writer, then a reader, of its own file
        try:
            path = os.path.join(data_fs, f"own{k}")
            data = os.urandom(4 * MiB + k)
            with open(path, "wb") as f:
                for i in range(0, len(data), 100_000):
                    f.write(data[i:i + 100_000])
            for _ in range(3):
                assert _reread(path) == data
        except BaseException as e:
            errors.append(e)

    def region(k: int) -> None:  # writers of disjoint regions of one file
        try:
            fd = os.open(shared, os.O_WRONLY)
            try:
                for i in range(16):
                    os.pwrite(fd, bytes([k + 1]) * chunk, (k * 16 + i) * chunk)
            finally:
                os.close(fd)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=own_file, args=(k,)) for k in range(4)]
    threads += [threading.Thread(target=region, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(100)
    assert not errors, errors
    assert _reread(shared) == b"".join(bytes([k + 1]) * (16 * chunk) for k in range(8))


def _strace_splices(pid: int, action: Any) -> Optional[int]:
    """How many splice(2) calls the daemon made while ``action`` ran (None without strace)."""
    if shutil.which("strace") is None:
        return None
    out = f"/tmp/pyfuse-strace-{pid}.txt"
    tracer = subprocess.Popen(["strace", "-f", "-c", "-e", "trace=splice", "-o", out,
                               "-p", str(pid)], stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)  # strace attaches to every thread
        action()
    finally:
        tracer.terminate()
        tracer.wait(10)
    with open(out) as f:
        text = f.read()
    os.unlink(out)
    counts = [int(line.split()[3]) for line in text.splitlines() if line.endswith(" splice")]
    return counts[0] if counts else 0


@pytest.mark.timeout(120)
def test_passthrough_zero_copy_by_hash(passthrough_fs: tuple[str, str, Any]) -> None:
    mnt, src, proc = passthrough_fs
    data = os.urandom(48 * MiB + 777)
    with open(os.path.join(src, "in"), "wb") as f:
        f.write(data)
    want = hashlib.sha256(data).hexdigest()

    def read_through() -> None:
        h = hashlib.sha256()
        with open(os.path.join(mnt, "in"), "rb", buffering=0) as f:
            while block := f.read(rng.choice([4096, 65536, 131072 + 17, MiB])):
                h.update(block)
        assert h.hexdigest() == want

    def write_through() -> None:
        with open(os.path.join(mnt, "out"), "wb", buffering=0) as f:
            for i in range(0, len(data), MiB):
                f.write(data[i:i + MiB])

    rng = random.Random(2)
    splices = _strace_splices(proc.pid, lambda: (read_through(), write_through()))
    with open(os.path.join(src, "out"), "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == want
    read_through()
    if splices is None:
        pytest.skip("strace is not installed: contents checked, splice use not observed")
    assert splices > 0, "the data did not move with splice(2)"


@pytest.mark.rss
def test_passthrough_rss_flat_while_writing(passthrough_fs: tuple[str, str, Any]) -> None:
    mnt, _, proc = passthrough_fs

    def rss() -> int:
        with open(f"/proc/{proc.pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))

    block = os.urandom(MiB)
    with open(os.path.join(mnt, "w"), "wb", buffering=0) as f:
        f.write(block)
        before = rss()
        for _ in range(127):
            f.write(block)
    grown = rss() - before
    assert grown < 16 * 1024, f"daemon RSS grew by {grown} KiB while writing 128 MiB"


# -- in-process filesystems: the API itself --------------------------------------------------


class OneFile(pyfuse.Operations):
    """/f of a given content; records request sizes; read answers through ``answer``."""

    def __init__(self, content: bytes = b"", answer: Any = None) -> None:
        self.content = bytearray(content)
        self.answer = answer
        self.read_sizes: list[int] = []
        self.write_sizes: list[int] = []
        self.direct = False
        self.keep = False
        self.nonseekable = False

    def getattr(self, path: str, fh: Optional[int]) -> Attr:
        if path == "/":
            return Attr(mode=0o40755, nlink=2)
        if path == "/f":
            return Attr(mode=0o100644, size=len(self.content))
        raise FuseError(errno.ENOENT)

    def open(self, path: str, flags: int) -> FileInfo:
        return FileInfo(fh=7, direct_io=self.direct, keep_cache=self.keep,
                        nonseekable=self.nonseekable)

    def read(self, path: str, size: int, offset: int, fh: int) -> Any:
        assert fh == 7
        self.read_sizes.append(size)
        if self.answer is not None:
            return self.answer(size, offset)
        return bytes(self.content[offset:offset + size])

    def write(self, path: str, data: memoryview, offset: int, fh: int) -> int:
        assert data.readonly
        self.write_sizes.append(len(data))
        if offset > len(self.content):
            self.content.extend(bytes(offset - len(self.content)))
        self.content[offset:offset + len(data)] = data
        return len(data)

    def truncate(self, path: str, size: int, fh: Optional[int]) -> None:
        del self.content[size:]


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "array", "array-q",
                                  "mmap"])
def test_read_accepts_any_buffer(mount_ops: Any, mnt: str, kind: str) -> None:
    payload = bytes(range(256)) * 64

    def answer(size: int, offset: int) -> Any:
        chunk = payload[offset:offset + size]
        if kind == "bytearray":
            return bytearray(chunk)
        if kind == "memoryview":
            return memoryview(payload)[offset:offset + size]
        if kind == "array":
            return array.array("B", chunk)
        if kind == "array-q":  # 8-byte items: the byte count is not len()
            return array.array("q", chunk)
        if kind == "mmap":
            m = mmap.mmap(-1, max(len(chunk), 1))
            m[:len(chunk)] = chunk
            return memoryview(m)[:len(chunk)]
        return chunk

    mount_ops(OneFile(payload, answer))
    assert _reread(os.path.join(mnt, "f")) == payload


@pytest.mark.expect_errors
def test_read_longer_than_asked_is_eio(mount_ops: Any, mnt: str, caplog: Any) -> None:
    mount_ops(OneFile(b"abc", lambda size, offset: b"x" * (size + 1)))
    with pytest.raises(OSError) as ei:
        _reread(os.path.join(mnt, "f"))
    assert ei.value.errno == errno.EIO
    assert "more than the" in caplog.text


def test_read_answered_with_fd_range(mount_ops: Any, mnt: str, tmp_path: Any) -> None:
    backing = tmp_path / "backing"
    data = os.urandom(3 * MiB + 11)
    backing.write_bytes(b"pad" + data)
    fd = os.open(str(backing), os.O_RDONLY)
    try:
        limited = {"on": False}

        def answer(size: int, offset: int) -> FdRange:
            return FdRange(fd, offset + 3, 5) if limited["on"] else FdRange(fd, offset + 3)

        s = mount_ops(OneFile(data, answer), stats=True)
        assert _reread(os.path.join(mnt, "f")) == data  # short at the end of the backing file
        limited["on"] = True
        with open(os.path.join(mnt, "f"), "rb", buffering=0) as f:
            assert f.read(100) == data[:5]  # size caps the reply
        read = s.stats()["read"]
        assert read["count"] > 0 and read["errors"] == 0, read  # an FdRange is no error
    finally:
        os.close(fd)


class FdWrites(OneFile):
    """write_fd sends writes at even MiB offsets into a backing fd, the rest to write()."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd

    def write_fd(self, path: str, size: int, offset: int, fh: int) -> Optional[FdRange]:
        return FdRange(self.fd, offset) if offset % (2 * MiB) == 0 else None


def test_write_fd_and_fallback_to_write(mount_ops: Any, mnt: str, tmp_path: Any) -> None:
    backing = os.open(str(tmp_path / "backing"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        ops = FdWrites(backing)
        mount_ops(ops, config=pyfuse.Config(splice_read=True))
        fd = os.open(os.path.join(mnt, "f"), os.O_WRONLY)
        try:
            a, b = os.urandom(MiB), os.urandom(MiB)
            assert os.pwrite(fd, a, 0) == MiB       # into the backing fd
            assert os.pwrite(fd, b, MiB) == MiB     # through write()
        finally:
            os.close(fd)
        assert os.pread(backing, MiB, 0) == a
        assert bytes(ops.content[MiB:]) == b
    finally:
        os.close(backing)


@pytest.mark.expect_errors
@pytest.mark.parametrize("bad", [FdRange(-1, 0), FdRange(0, -5), "fd"])
def test_bad_fd_range_is_eio(mount_ops: Any, mnt: str, bad: Any, caplog: Any) -> None:
    mount_ops(OneFile(b"abc", lambda size, offset: bad))
    with pytest.raises(OSError) as ei:
        _reread(os.path.join(mnt, "f"))
    assert ei.value.errno == errno.EIO


def test_large_requests(mount_ops: Any, mnt: str) -> None:
    ops = OneFile(bytes(4 * MiB))
    ops.direct = True  # direct_io: reads reach the handler as the caller sized them
    mount_ops(ops)
    with open(os.path.join(mnt, "f"), "r+b", buffering=0) as f:
        f.write(os.urandom(4 * MiB))
        f.seek(0)
        assert len(f.read(4 * MiB)) == 4 * MiB
    assert max(ops.write_sizes) == MiB  # 1 MiB requests (max_pages 256)
    assert max(ops.read_sizes) == MiB


def test_max_write_caps_requests(mount_ops: Any, mnt: str) -> None:
    ops = OneFile()
    mount_ops(ops, config=pyfuse.Config(max_write=64 * 1024))
    with open(os.path.join(mnt, "f"), "r+b", buffering=0) as f:
        f.write(os.urandom(MiB))
    assert max(ops.write_sizes) == 64 * 1024
    assert sum(ops.write_sizes) == MiB


class Rendezvous(OneFile):
    """Reading /f blocks until another request arrives: only a loop that serves requests
    concurrently (and releases the GIL while waiting on the kernel) lets the second through."""

    def __init__(self) -> None:
        super().__init__(b"x" * 10)
        self.second = threading.Event()

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        if offset == 0:
            if not self.second.wait(20):
                raise FuseError(errno.ETIMEDOUT)
            return b"first"
        self.second.set()
        return b"2"


@pytest.mark.timeout(60)
def test_blocked_handler_does_not_stall_others(mount_ops: Any, mnt: str) -> None:
    ops = Rendezvous()
    ops.direct = True
    mount_ops(ops, max_threads=4)
    results: dict[str, Any] = {}

    def first() -> None:
        with open(os.path.join(mnt, "f"), "rb", buffering=0) as f:
            results["first"] = f.read(5)

    t = threading.Thread(target=first)
    t.start()
    time.sleep(0.2)
    with open(os.path.join(mnt, "f"), "rb", buffering=0) as f:
        assert os.pread(f.fileno(), 1, 5) == b"2"
    t.join(30)
    assert results.get("first") == b"first"


def test_max_read_caps_requests(mount_ops: Any, mnt: str) -> None:
    ops = OneFile(bytes(MiB))
    ops.direct = True
    mount_ops(ops, config=pyfuse.Config(max_read=65536))
    with open(os.path.join(mnt, "f"), "rb", buffering=0) as f:
        assert len(f.read(MiB)) == MiB
    assert max(ops.read_sizes) == 65536


def test_fd_range_read_error_reaches_caller(mount_ops: Any, mnt: str, tmp_path: Any) -> None:
    dfd = os.open(str(tmp_path), os.O_RDONLY)  # pread on a directory: EISDIR
    try:
        mount_ops(OneFile(b"abc", lambda size, offset: FdRange(dfd, offset)))
        with pytest.raises(OSError) as ei:
            _reread(os.path.join(mnt, "f"))
        assert ei.value.errno == errno.EISDIR
    finally:
        os.close(dfd)


@pytest.mark.parametrize("how", ["none", "keep_cache", "kernel_cache"])
def test_page_cache_across_opens(mount_ops: Any, mnt: str, how: str) -> None:
    ops = OneFile(b"A" * 8192)
    ops.keep = how == "keep_cache"
    mount_ops(ops, config=pyfuse.Config(kernel_cache=how == "kernel_cache"))
    path = os.path.join(mnt, "f")
    assert _reread(path) == b"A" * 8192
    reads = len(ops.read_sizes)
    ops.content[:] = b"B" * 8192  # changed behind the kernel's back, same size and times
    if how == "none":  # by default an open drops the cached pages: the new data is read
        assert _reread(path) == b"B" * 8192
        assert len(ops.read_sizes) > reads
    else:  # the cached pages survive the open: no READ reaches the filesystem
        assert _reread(path) == b"A" * 8192
        assert len(ops.read_sizes) == reads


def test_nonseekable(mount_ops: Any, mnt: str) -> None:
    ops = OneFile(b"stream")
    ops.nonseekable = True
    mount_ops(ops)
    with open(os.path.join(mnt, "f"), "rb", buffering=0) as f:
        with pytest.raises(OSError) as ei:
            os.lseek(f.fileno(), 2, os.SEEK_SET)
        assert ei.value.errno == errno.ESPIPE
        assert f.read(100) == b"stream"


@pytest.mark.parametrize("threads, clone_fd", [(False, False), (True, True)])
def test_loop_settings_round_trip(mount_ops: Any, mnt: str, threads: bool,
                                  clone_fd: bool) -> None:
    ops = OneFile(bytes(MiB))
    mount_ops(ops, threads=threads, clone_fd=clone_fd, max_threads=2)
    data = os.urandom(MiB)
    with open(os.path.join(mnt, "f"), "r+b", buffering=0) as f:
        f.write(data)
    assert _reread(os.path.join(mnt, "f")) == data


class Backed(OneFile):
    """open() hands out a real file's descriptor as an fd_backed FileInfo."""

    def __init__(self, backing: str, fh: Any = None) -> None:
        super().__init__(b"")
        self.backing = backing
        self.fh = fh
        self.released: list[int] = []

    def getattr(self, path: str, fh: Optional[int]) -> Attr:
        if path == "/f":
            return Attr(mode=0o100644, size=os.stat(self.backing).st_size)
        return super().getattr(path, fh)

    def open(self, path: str, flags: int) -> FileInfo:
        fd = os.open(self.backing, os.O_RDWR) if self.fh is None else self.fh
        return FileInfo(fd, fd_backed=True)

    def release(self, path: str, fh: int) -> None:
        self.released.append(fh)
        if self.fh is None:
            os.close(fh)


@pytest.mark.parametrize("splice", [False, True])
def test_fd_backed_open_file_bypasses_python(mount_ops: Any, mnt: str, tmp_path: Any,
                                             splice: bool) -> None:
    backing = tmp_path / "backing"
    data = os.urandom(3 * MiB + 5)
    backing.write_bytes(data)
    ops = Backed(str(backing))
    mount_ops(ops, config=pyfuse.Config(splice_read=splice, splice_write=splice))
    path = os.path.join(mnt, "f")
    assert _reread(path) == data
    with open(path, "r+b", buffering=0) as f:
        f.seek(MiB)
        f.write(b"new" * 1000)
    assert backing.read_bytes()[MiB:MiB + 3000] == b"new" * 1000
    assert ops.read_sizes == [] and ops.write_sizes == []  # Python never saw the data
    assert ops.released and all(fh < 1 << 31 for fh in ops.released)  # the plain fd comes back


@pytest.mark.expect_errors
def test_fd_backed_needs_a_descriptor(mount_ops: Any, mnt: str, tmp_path: Any) -> None:
    (tmp_path / "backing").write_bytes(b"x")
    mount_ops(Backed(str(tmp_path / "backing"), fh=1 << 40))
    with pytest.raises(OSError) as ei:
        open(os.path.join(mnt, "f"), "rb").close()
    assert ei.value.errno == errno.EIO
