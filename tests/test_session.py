"""Mounting and the operations not covered by the examples: two mounts in one process,
non-UTF-8 names, context(), unregistered operations, options, and the handlers for ioctl, poll,
lock, flock, access, opendir/releasedir/fsyncdir and init/destroy."""
from __future__ import annotations

import errno
import fcntl
import os
import select
import signal
import stat
import struct
import subprocess
import sys
import threading
import time

import pytest

import pyfuse
from pyfuse import Attr, is_mounted, testing
from pyfuse.examples.hello import Hello
from pyfuse.examples.memory import CONFIG, Memory


def test_two_mounts_in_one_process(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    with testing.mounted(Hello(), str(a)), testing.mounted(Memory(), str(b), config=CONFIG):
        (b / "x").write_text("memory")
        assert os.listdir(a) == ["hello"] and os.listdir(b) == ["x"]
        assert (a / "hello").read_text() == "Hello World!\n"
    assert not pyfuse.is_mounted(str(a)) and not pyfuse.is_mounted(str(b))


def test_non_utf8_names(mount_ops, mnt):
    mount_ops(Memory(), config=CONFIG)
    raw = b"caf\xe9-\xff\xfe.txt"  # latin-1 bytes, not UTF-8
    p = os.path.join(os.fsencode(mnt), raw)
    with open(p, "wb") as f:
        f.write(b"x")
    assert os.listdir(os.fsencode(mnt)) == [raw]
    assert os.listdir(mnt) == [os.fsdecode(raw)]
    os.rename(p, p + b"2")
    assert os.listdir(os.fsencode(mnt)) == [raw + b"2"]
    os.setxattr(p + b"2", "user.\udcff", b"v")  # xattr names survive too
    assert os.listxattr(p + b"2") == ["user.\udcff"]


class Recorder(pyfuse.Operations):
    """Records the context of each create and the calls to the less common handlers."""

    def __init__(self):
        self.calls = []
        self.created = {}
        self.lock_state = None
        self.inited = threading.Event()
        self.destroyed = threading.Event()

    def init(self):
        self.inited.set()

    def destroy(self):
        self.destroyed.set()

    def getattr(self, path, fh):
        if path == "/":
            return Attr(mode=stat.S_IFDIR | 0o755, nlink=2)
        if path in self.created or path == "/f":
            return Attr(mode=stat.S_IFREG | 0o644, size=0)
        raise pyfuse.FuseError(errno.ENOENT)

    def create(self, path, mode, flags):
        self.created[path] = pyfuse.context()
        return 42

    def open(self, path, flags):
        return pyfuse.FileInfo(fh=43, direct_io=True)

    def release(self, path, fh):
        self.calls.append(("release", fh))

    def flush(self, path, fh):
        self.calls.append(("flush", fh))

    def access(self, path, mode):
        self.calls.append(("access", path, mode))
        if mode & os.W_OK:
            raise pyfuse.FuseError(errno.EACCES)

    def ioctl(self, path, cmd, arg, fh, flags, data, out_size):
        self.calls.append(("ioctl", cmd, fh, data))
        if data is None:
            return 7
        return bytes(reversed(data))[:out_size]

    def poll(self, path, fh):
        return select.POLLIN | select.POLLOUT

    def lock(self, path, fh, cmd, lock):
        self.calls.append(("lock", cmd, lock.type, lock.start, lock.len))
        if cmd == fcntl.F_GETLK:
            lock.type = fcntl.F_WRLCK
            lock.start, lock.len, lock.pid = 10, 5, 4242

    def flock(self, path, fh, op):
        self.calls.append(("flock", fh, op))

    def opendir(self, path):
        return 99

    def readdir(self, path, offset, fh, plus):
        self.calls.append(("readdir", fh))
        return ["f"]

    def releasedir(self, path, fh):
        self.calls.append(("releasedir", fh))

    def fsyncdir(self, path, datasync, fh):
        self.calls.append(("fsyncdir", fh, datasync))


@pytest.fixture
def rec(mount_ops):
    ops = Recorder()
    session = mount_ops(ops)
    return ops, session.mountpoint


def test_context_and_create(rec):
    ops, mnt = rec
    fd = os.open(os.path.join(mnt, "new"), os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
    ctx = ops.created["/new"]
    assert (ctx.uid, ctx.gid, ctx.pid) == (os.getuid(), os.getgid(), os.getpid())
    deadline = time.monotonic() + 5  # the kernel sends RELEASE after close() returns
    while ("release", 42) not in ops.calls and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ("release", 42) in ops.calls and ("flush", 42) in ops.calls
    with pytest.raises(RuntimeError):
        pyfuse.context()  # not inside a request


def test_init_destroy_and_unregistered(mnt):
    ops = Recorder()
    with testing.mounted(ops, mnt):
        assert ops.inited.wait(5)
        with pytest.raises(OSError) as ei:
            os.mkdir(os.path.join(mnt, "d"))  # mkdir not overridden: not registered
        assert ei.value.errno == errno.ENOSYS
        with pytest.raises(OSError) as ei:
            os.unlink(os.path.join(mnt, "f"))
        assert ei.value.errno == errno.ENOSYS
    assert ops.destroyed.is_set()


def test_access(rec):
    ops, mnt = rec
    assert os.access(os.path.join(mnt, "f"), os.R_OK)
    assert not os.access(os.path.join(mnt, "f"), os.W_OK)
    assert ("access", "/f", os.R_OK) in ops.calls


def test_ioctl(rec):
    ops, mnt = rec
    iowr = (3 << 30) | (8 << 16) | (ord("p") << 8) | 1  # _IOWR('p', 1, 8 bytes)
    io_none = (ord("p") << 8) | 2  # _IO('p', 2)
    with open(os.path.join(mnt, "f"), "rb") as f:
        buf = bytearray(b"12345678")
        assert fcntl.ioctl(f.fileno(), iowr, buf, True) == 0
        assert bytes(buf) == b"87654321"
        assert fcntl.ioctl(f.fileno(), io_none, 0) == 7
    assert ("ioctl", iowr, 43, b"12345678") in ops.calls


def test_poll(rec):
    _, mnt = rec
    with open(os.path.join(mnt, "f"), "rb") as f:
        p = select.poll()
        p.register(f.fileno(), select.POLLIN)
        assert p.poll(2000) == [(f.fileno(), select.POLLIN)]


def test_posix_lock_and_flock(rec):
    ops, mnt = rec
    with open(os.path.join(mnt, "f"), "r+b") as f:
        fcntl.lockf(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB, 3, 2)
        query = struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 100, 0)
        got = fcntl.fcntl(f.fileno(), fcntl.F_GETLK, query)
        ltype, _, start, length, pid = struct.unpack("hhqqi", got[:struct.calcsize("hhqqi")])
        assert (ltype, start, length) == (fcntl.F_WRLCK, 10, 5)
        fcntl.flock(f.fileno(), fcntl.LOCK_SH)
    assert any(c[0] == "lock" and c[1] in (fcntl.F_SETLK, fcntl.F_SETLKW) for c in ops.calls)
    assert ("flock", 43, fcntl.LOCK_SH) in ops.calls


def test_dir_handles(rec):
    ops, mnt = rec
    fd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(fd)
    os.close(fd)
    assert os.listdir(mnt) == ["f"]
    deadline = time.monotonic() + 5
    while ("releasedir", 99) not in ops.calls and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ("readdir", 99) in ops.calls and ("releasedir", 99) in ops.calls
    assert ("fsyncdir", 99, False) in ops.calls


def test_mount_options(mount_ops, mnt):
    mount_ops(Hello(), ro=True, allow_other=True, default_permissions=True, fsname="my,fs",
              subtype="hellofs", options={"noatime": True})
    with open("/proc/self/mountinfo") as f:
        line = next(x for x in f if f" {mnt} " in x)
    assert "fuse.hellofs" in line and "my,fs" in line.replace("\\054", ",")
    assert "allow_other" in line and "default_permissions" in line and "noatime" in line
    assert " ro," in line or ",ro," in line or line.split()[5].startswith("ro")


def test_mount_on_missing_dir(tmp_path):
    with pytest.raises(FileNotFoundError, match="mount point does not exist") as ei:
        with pyfuse.mount(Hello(), str(tmp_path / "missing")):
            pass
    assert ei.value.errno == errno.ENOENT and ei.value.filename == str(tmp_path / "missing")
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(NotADirectoryError, match="mount point is not a directory"):
        with pyfuse.mount(Hello(), str(f)):
            pass


@pytest.mark.expect_errors
def test_unknown_option_is_named(mnt):
    with pytest.raises(ValueError, match="bogusopt"):
        with pyfuse.mount(Hello(), mnt, options={"bogusopt": True}):
            pass


def test_run_rejects_non_operations(mnt):
    with pytest.raises(TypeError):
        pyfuse.run(object(), mnt)  # type: ignore[arg-type]


def test_single_threaded_loop(mount_ops, mnt):
    mount_ops(Memory(), threads=False, config=CONFIG)
    with open(os.path.join(mnt, "x"), "w") as f:
        f.write("single")
    assert open(os.path.join(mnt, "x")).read() == "single"




class _CountingGetattr(Hello):
    def __init__(self) -> None:
        super().__init__()
        self.getattrs = 0

    def getattr(self, path, fh):
        self.getattrs += 1
        return super().getattr(path, fh)


def test_options_naming_a_config_field_set_it(mount_ops, mnt):
    """options={"attr_timeout": 0} is the Config field, for every caller (not only the
    examples' command line): with the attribute cache off, every stat reaches getattr."""
    ops = _CountingGetattr()
    session = mount_ops(ops, options={"attr_timeout": 0, "entry_timeout": "0", "noatime": True},
                        config=pyfuse.Config(negative_timeout=0.5))
    assert (session.config.attr_timeout, session.config.entry_timeout,
            session.config.negative_timeout) == (0.0, 0.0, 0.5)
    p = os.path.join(mnt, "hello")
    os.stat(p)
    before = ops.getattrs
    for _ in range(5):
        os.stat(p)
    assert ops.getattrs - before >= 5  # cached for 1 s by default: 0 more calls
    with open("/proc/self/mountinfo") as f:
        line = next(x for x in f if f" {mnt} " in x)
    assert "noatime" in line and "attr_timeout" not in line


def test_option_with_a_bad_config_value_names_it(mnt):
    with pytest.raises(ValueError, match=r"attr_timeout='soon'.*Config\.attr_timeout"):
        pyfuse.Session(Hello(), mnt, options={"attr_timeout": "soon"})
    with pytest.raises(ValueError, match=r"direct_io='maybe'"):
        pyfuse.Session(Hello(), mnt, options={"direct_io": "maybe"})
    s = pyfuse.Session(Hello(), mnt, options={"direct_io": "on", "umask": "022",
                                              "max_write": "131072"})
    assert (s.config.direct_io, s.config.umask, s.config.max_write) == (True, 0o22, 131072)


def test_mounting_over_a_live_mount_is_refused(tmp_path):
    mnt = str(tmp_path)
    with pyfuse.mount(Hello(), mnt) as first:
        with pytest.raises(OSError, match=r"live FUSE filesystem \(connection \d+:\d+\)") as ei:
            with pyfuse.mount(Hello(), mnt):
                pass
        assert ei.value.errno == errno.EBUSY
        assert pyfuse.mounts.fuse_device(mnt) == first.connection
        assert open(os.path.join(mnt, "hello")).read() == "Hello World!\n"


class _Other(Hello):
    def getattr(self, path, fh):
        if path == "/other":
            return Attr(mode=stat.S_IFREG | 0o444)
        return super().getattr(path, fh)

    def readdir(self, path, offset, fh, plus):
        return [".", "..", "other"]


def test_stop_unmounts_only_its_own_mount(tmp_path):
    """stack=True mounts on top of a live mount; the covered session's stop() leaves the one
    on top alone (it used to unmount whatever was on top of the path)."""
    mnt = str(tmp_path)
    below = pyfuse.mount(Hello(), mnt)
    s1 = below.__enter__()
    try:
        with pyfuse.mount(_Other(), mnt, stack=True) as s2:
            assert s2.connection != s1.connection
            assert os.listdir(mnt) == ["other"]
            below.__exit__(None, None, None)     # stop the covered one
            assert pyfuse.mounts.fuse_device(mnt) == s2.connection
            assert os.listdir(mnt) == ["other"]  # the one on top still serves
        assert not pyfuse.is_mounted(mnt) or pyfuse.mounts.fuse_device(mnt) != s2.connection
    finally:
        below.__exit__(None, None, None)
        for _ in range(3):  # the aborted covered mount, if any, is left stale: clean it
            if not pyfuse.is_mounted(mnt):
                break
            pyfuse.unmount(mnt, lazy=True)
    assert not pyfuse.is_mounted(mnt)


class _SlowListing(Hello):
    def readdir(self, path, offset, fh, plus):
        time.sleep(0.02)          # in the handler itself
        yield from (".", "..")
        time.sleep(0.03)          # in the generator: the filesystem's code too
        yield "hello"


def test_stats_count_errors_and_split_the_time(mount_ops, mnt):
    """stats=True: per operation, how many requests, how many errors, and the time of the
    handler apart from pyfuse's own (a readdir generator's body counts as the handler's)."""
    session = mount_ops(_SlowListing(), stats=True, config=pyfuse.Config(attr_timeout=0,
                                                                       entry_timeout=0))
    for _ in range(20):
        os.stat(os.path.join(mnt, "hello"))
    for _ in range(3):
        with pytest.raises(FileNotFoundError):
            os.stat(os.path.join(mnt, "missing"))
    assert os.listdir(mnt) == ["hello"]
    st = session.stats()
    g = st["getattr"]
    assert g["count"] >= 23 and g["errors"] >= 3, g
    assert 0 < g["handler_us"]["p50"] <= g["total_us"]["p50"], g
    assert g["pyfuse_us"]["p50"] >= 0
    r = st["readdir"]
    assert r["count"] >= 1 and r["errors"] == 0
    assert r["handler_us"]["max"] >= 50_000, r      # both sleeps are the filesystem's
    assert r["pyfuse_us"]["max"] < 20_000, r         # and neither is pyfuse's
    assert "getattr" in session.stats_table() and "readdir" in session.stats_table()


def test_stats_count_every_request_of_every_thread_and_time_one_in_eight(mount_ops, mnt):
    """Requests served by several threads at once are all counted, their errors too, and one in
    SAMPLE of them is timed; a handler that fails on a timed request fails as it would
    without statistics."""
    from pyfuse._core.stats import SAMPLE

    session = mount_ops(Hello(), stats=True, config=pyfuse.Config(
        attr_timeout=0, entry_timeout=0, negative_timeout=0))
    missing = os.path.join(mnt, "missing")

    def stat_missing():
        for _ in range(50):
            with pytest.raises(FileNotFoundError):
                os.stat(missing)

    threads = [threading.Thread(target=stat_missing) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    g = session.stats()["getattr"]
    assert g["errors"] >= 400 and g["count"] >= g["errors"], g
    timed = session._stats.c.op[pyfuse.session.OPS["getattr"]].timed
    assert timed == -(-g["count"] // SAMPLE), (timed, g)
    assert open(os.path.join(mnt, "hello")).read() == "Hello World!\n"


def test_stats_off_by_default(mount_ops, mnt):
    session = mount_ops(Hello())
    with pytest.raises(RuntimeError, match="stats=True"):
        session.stats()


def test_example_stats_flag(example, mnt):
    """--stats prints the table on SIGUSR1 and at exit."""
    proc = example("hello", "--stats", mountpoint=mnt)
    for _ in range(5):
        open(os.path.join(mnt, "hello")).read()
    proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 5
    while "getattr" not in open(proc.log).read() and time.monotonic() < deadline:
        time.sleep(0.05)
    text = open(proc.log).read()
    assert "operation" in text and "getattr" in text and "read" in text, text
    assert is_mounted(mnt)  # SIGUSR1 did not stop it


@pytest.mark.timeout(60)
def test_poll_notification(mount_ops, mnt):
    """poll(path, fh, handle): the filesystem keeps the handle of a sleeping poll(2) caller and
    wakes it with handle.notify() (libfuse's fuse_notify_poll)."""
    class Ready(pyfuse.Operations):
        def __init__(self):
            self.ready = False
            self.handle = None
            self.got = threading.Event()

        def getattr(self, path, fh):
            if path == "/":
                return pyfuse.Attr(mode=stat.S_IFDIR | 0o755, nlink=2)
            if path == "/p":
                return pyfuse.Attr(mode=stat.S_IFREG | 0o644)
            raise pyfuse.FuseError(errno.ENOENT)

        def open(self, path, flags):
            return pyfuse.FileInfo(direct_io=True)

        def poll(self, path, fh, handle):
            if self.ready:
                return select.POLLIN
            if handle is not None:
                self.handle = handle
                self.got.set()
            return 0

    ops = Ready()
    mount_ops(ops)
    client = ("import os, select, sys\n"
              "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
              "pl = select.poll(); pl.register(fd, select.POLLIN)\n"
              "r = pl.poll(20000); print(r and r[0][1])\n")
    proc = subprocess.Popen([sys.executable, "-c", client, os.path.join(mnt, "p")],
                            stdout=subprocess.PIPE, text=True)
    assert ops.got.wait(10)
    ops.ready = True
    ops.handle.notify()
    out, _ = proc.communicate(timeout=30)
    assert int(out) == select.POLLIN


class GetattrPaths(pyfuse.Operations):
    """Every name is a directory but ``f...`` (a file whose size is its path's length); files
    can be made and removed. Records the path and handle of each getattr."""

    def __init__(self):
        self.seen = []
        self.made = set()

    def getattr(self, path, fh):
        self.seen.append((path, fh))
        if path is None:  # an open file whose name is gone (nullpath_ok, hard_remove)
            return Attr(mode=stat.S_IFREG | 0o644, size=fh)
        if path.rsplit("/", 1)[-1].startswith("f"):
            if path.startswith("/made") and path not in self.made:
                raise pyfuse.FuseError(errno.ENOENT)
            return Attr(mode=stat.S_IFREG | 0o644, size=len(os.fsencode(path)))
        return Attr(mode=stat.S_IFDIR | 0o755, nlink=2)

    def create(self, path, mode, flags):
        self.made.add(path)
        return 77

    def unlink(self, path):
        self.made.discard(path)

    def open(self, path, flags):
        return 5

    def read(self, path, size, offset, fh):  # a file's content is its path (its size)
        data = b"gone:%d" % fh if path is None else os.fsencode(path)
        return data[offset:offset + size]


@pytest.mark.timeout(60)
def test_getattr_paths_of_every_length(mount_ops, mnt):
    """getattr's path reaches the filesystem whole and decoded at every length: short, either
    side of what the shim copies for the callback (4,096 bytes), and beyond PATH_MAX (reached
    by descriptor-relative calls), non-UTF-8 bytes included; an open file whose name is gone
    gets None and its handle."""
    ops = GetattrPaths()
    mount_ops(ops, config=pyfuse.Config(nullpath_ok=True, hard_remove=True, attr_timeout=0,
                                        entry_timeout=0))
    fd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
    depth, at = 0, 0  # the path of fd in the mount is at bytes long
    try:
        for total in (4000, 4095, 4096, 4097, 5200, 9000):
            while total - at > 250:  # go down until a last name of at most 250 bytes reaches it
                sub = os.open("d" * 200, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd, at, depth = sub, at + 201, depth + 1
            name = "f" + "x" * (total - at - 2)  # "/" + name: total bytes
            ops.seen.clear()
            assert os.stat(name, dir_fd=fd).st_size == total
            want = "/" + "/".join(["d" * 200] * depth + [name])
            assert (want, None) in ops.seen and len(want) == total
        raw = b"f\xff\xfe"  # not UTF-8: os.fsdecode's str, as for every other path
        assert os.stat(raw, dir_fd=fd).st_size == at + len(raw) + 1
        assert any(p is not None and p.endswith("/" + os.fsdecode(raw)) for p, _ in ops.seen)
    finally:
        os.close(fd)
    made = os.path.join(mnt, "made", "f1")
    f = os.open(made, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.unlink(made)
        ops.seen.clear()
        # SEEK_END asks for the size with the open file's handle (fstat would not: the
        # kernel sends no handle, and libfuse answers ESTALE for the nameless node)
        assert os.lseek(f, 0, os.SEEK_END) == 77  # the size getattr gave: the handle
        assert ops.seen == [(None, 77)]
    finally:
        os.close(f)


@pytest.mark.timeout(60)
def test_read_paths_of_every_length(mount_ops, mnt):
    """read's path crosses as getattr's: whole and decoded at every length, non-UTF-8 bytes
    included."""
    ops = GetattrPaths()
    mount_ops(ops, config=pyfuse.Config(attr_timeout=0, entry_timeout=0, direct_io=True))
    fd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
    depth, at = 0, 0
    try:
        for total in (4000, 4095, 4096, 4097, 9000):
            while total - at > 250:
                sub = os.open("d" * 200, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd, at, depth = sub, at + 201, depth + 1
            name = "f" + "x" * (total - at - 2)
            want = "/" + "/".join(["d" * 200] * depth + [name])
            f = os.open(name, os.O_RDONLY, dir_fd=fd)
            try:
                assert os.read(f, 16384) == want.encode()
            finally:
                os.close(f)
        raw = b"f\xff\xfe"
        f = os.open(raw, os.O_RDONLY, dir_fd=fd)
        try:
            assert os.read(f, 16384).endswith(b"/" + raw)
        finally:
            os.close(f)
    finally:
        os.close(fd)


@pytest.mark.timeout(60)
def test_read_without_paths(mount_ops, mnt):
    """Config(nullpath_ok=True): read gets None for the path (libfuse computes none for a
    request with a handle), and its handle, also once the name is gone."""
    ops = GetattrPaths()
    mount_ops(ops, config=pyfuse.Config(nullpath_ok=True, hard_remove=True, attr_timeout=0,
                                        entry_timeout=0, direct_io=True))
    made = os.path.join(mnt, "made", "f1")
    f = os.open(made, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        assert os.pread(f, 100, 0) == b"gone:77"
        os.unlink(made)
        assert os.pread(f, 100, 0) == b"gone:77"
    finally:
        os.close(f)
