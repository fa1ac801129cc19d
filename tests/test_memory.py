"""The memory example, mounted in-process, through real system calls: every operation it
implements, with the errno of each error case compared to what tmpfs gives."""
from __future__ import annotations

import errno
import fcntl
import json
import os
import select
import stat
import subprocess
import sys
import time

import pytest

from pyfuse.examples.memory import CONFIG, Memory
from pyfuse.examples.memory_ll import MemoryLL


@pytest.fixture(params=["memory", "memory_ll"])
def fs(request, mount_ops, mnt):
    """The memory example, and its inode-API twin (pyfuse.examples.memory_ll)."""
    if request.param == "memory":
        mount_ops(Memory(), default_permissions=True, config=CONFIG)
    else:
        mount_ops(MemoryLL(), default_permissions=True)
    return mnt


def err(fn, *args, **kw):
    with pytest.raises(OSError) as ei:
        fn(*args, **kw)
    return ei.value.errno


def test_empty_root(fs):
    assert os.listdir(fs) == []
    st = os.stat(fs)
    assert stat.S_ISDIR(st.st_mode) and st.st_nlink == 2


def test_create_write_read(fs):
    p = os.path.join(fs, "f")
    with open(p, "wb") as f:
        f.write(b"hello world")
    with open(p, "rb") as f:
        assert f.read() == b"hello world"
    st = os.stat(p)
    assert stat.S_ISREG(st.st_mode) and st.st_size == 11 and st.st_nlink == 1
    with open(p, "r+b") as f:
        f.seek(6)
        f.write(b"WORLD!")
    with open(p, "rb") as f:
        assert f.read() == b"hello WORLD!"
    # O_EXCL on an existing name
    assert err(os.open, p, os.O_CREAT | os.O_EXCL | os.O_WRONLY) == errno.EEXIST
    assert err(os.open, os.path.join(fs, "missing"), os.O_RDONLY) == errno.ENOENT


def test_append_and_sparse(fs):
    p = os.path.join(fs, "a")
    with open(p, "ab") as f:
        f.write(b"12")
        f.write(b"34")
    fd = os.open(p, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"56")
    os.close(fd)
    assert open(p, "rb").read() == b"123456"
    fd = os.open(p, os.O_RDWR)
    os.pwrite(fd, b"x", 100)
    assert os.pread(fd, 200, 0) == b"123456" + bytes(94) + b"x"
    assert os.pread(fd, 10, 500) == b""
    os.close(fd)
    assert os.stat(p).st_size == 101


def test_truncate_and_ftruncate(fs):
    p = os.path.join(fs, "t")
    open(p, "wb").write(b"abcdef")
    os.truncate(p, 3)
    assert open(p, "rb").read() == b"abc"
    with open(p, "r+b") as f:
        os.ftruncate(f.fileno(), 5)
    assert open(p, "rb").read() == b"abc\0\0"
    with open(p, "wb"):  # O_TRUNC
        pass
    assert os.stat(p).st_size == 0
    assert err(os.truncate, fs, 0) == errno.EISDIR


def test_mkdir_rmdir_nlink(fs):
    d = os.path.join(fs, "d")
    os.mkdir(d, 0o750)
    st = os.stat(d)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o750 & ~_umask()
    assert os.stat(fs).st_nlink == 3
    os.mkdir(os.path.join(d, "sub"))
    assert os.stat(d).st_nlink == 3
    assert err(os.mkdir, d) == errno.EEXIST
    assert err(os.rmdir, d) == errno.ENOTEMPTY
    open(os.path.join(d, "file"), "w").close()
    assert err(os.rmdir, os.path.join(d, "file")) == errno.ENOTDIR
    assert err(os.unlink, os.path.join(d, "sub")) == errno.EISDIR
    assert err(os.mkdir, os.path.join(d, "file", "x")) == errno.ENOTDIR
    os.rmdir(os.path.join(d, "sub"))
    os.unlink(os.path.join(d, "file"))
    os.rmdir(d)
    assert os.stat(fs).st_nlink == 2
    assert err(os.rmdir, d) == errno.ENOENT


def _umask():
    m = os.umask(0)
    os.umask(m)
    return m


def test_symlink_readlink(fs):
    link = os.path.join(fs, "l")
    os.symlink("target/of/link", link)
    assert os.readlink(link) == "target/of/link"
    st = os.lstat(link)
    assert stat.S_ISLNK(st.st_mode) and st.st_size == len("target/of/link")
    open(os.path.join(fs, "real"), "w").write("data")
    os.symlink("real", os.path.join(fs, "l2"))
    assert open(os.path.join(fs, "l2")).read() == "data"
    assert err(os.readlink, os.path.join(fs, "real")) == errno.EINVAL
    assert err(os.symlink, "x", link) == errno.EEXIST


def test_hard_links(fs):
    a, b = os.path.join(fs, "a"), os.path.join(fs, "b")
    open(a, "w").write("shared")
    os.link(a, b)
    assert os.stat(a).st_nlink == 2 and os.stat(b).st_ino == os.stat(a).st_ino
    with open(b, "a") as f:
        f.write("!")
    assert open(a).read() == "shared!"
    os.unlink(a)
    assert os.stat(b).st_nlink == 1 and open(b).read() == "shared!"
    os.mkdir(os.path.join(fs, "d"))
    assert err(os.link, os.path.join(fs, "d"), os.path.join(fs, "d2")) == errno.EPERM
    assert err(os.link, b, b) == errno.EEXIST


def test_rename(fs):
    a, b = os.path.join(fs, "a"), os.path.join(fs, "b")
    open(a, "w").write("A")
    os.rename(a, b)
    assert not os.path.exists(a) and open(b).read() == "A"
    open(a, "w").write("A2")
    os.rename(a, b)  # replaces
    assert open(b).read() == "A2" and sorted(os.listdir(fs)) == ["b"]
    os.mkdir(os.path.join(fs, "d"))
    os.mkdir(os.path.join(fs, "e"))
    assert err(os.rename, b, os.path.join(fs, "d")) == errno.EISDIR
    assert err(os.rename, os.path.join(fs, "d"), b) == errno.ENOTDIR
    assert err(os.rename, os.path.join(fs, "d"), os.path.join(fs, "d", "x")) == errno.EINVAL
    open(os.path.join(fs, "e", "f"), "w").close()
    assert err(os.rename, os.path.join(fs, "d"), os.path.join(fs, "e")) == errno.ENOTEMPTY
    os.rename(os.path.join(fs, "d"), os.path.join(fs, "e", "d"))  # move a dir: nlink follows
    assert os.stat(fs).st_nlink == 3 and os.stat(os.path.join(fs, "e")).st_nlink == 3
    assert err(os.rename, os.path.join(fs, "nope"), b) == errno.ENOENT


def _renameat2(old, new, flags):
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(-100, os.fsencode(old), -100, os.fsencode(new), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def test_rename_noreplace_and_exchange(fs):
    a, b = os.path.join(fs, "a"), os.path.join(fs, "b")
    open(a, "w").write("A")
    open(b, "w").write("B")
    assert err(_renameat2, a, b, 1) == errno.EEXIST  # RENAME_NOREPLACE
    _renameat2(a, b, 2)  # RENAME_EXCHANGE
    assert open(a).read() == "B" and open(b).read() == "A"
    assert err(_renameat2, a, os.path.join(fs, "c"), 2) == errno.ENOENT
    _renameat2(a, os.path.join(fs, "c"), 1)
    assert open(os.path.join(fs, "c")).read() == "B"


def test_chmod_chown_utimens(fs):
    p = os.path.join(fs, "f")
    open(p, "w").close()
    os.chmod(p, 0o4751)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o4751
    os.chown(p, 1234, 5678)
    st = os.stat(p)
    assert (st.st_uid, st.st_gid) == (1234, 5678)
    assert not st.st_mode & stat.S_ISUID  # chown clears setuid
    os.chown(p, -1, 42)
    st = os.stat(p)
    assert (st.st_uid, st.st_gid) == (1234, 42)
    os.utime(p, ns=(1_000_000_123, 2_000_000_456))
    st = os.stat(p)
    assert (st.st_atime_ns, st.st_mtime_ns) == (1_000_000_123, 2_000_000_456)
    before = time.time_ns()
    os.utime(p)  # UTIME_NOW for both
    st = os.stat(p)
    assert st.st_mtime_ns >= before - 10_000_000 and st.st_atime_ns >= before - 10_000_000
    with open(p, "w") as f:  # fchmod/futimens through a handle
        os.chmod(f.fileno(), 0o600)
        os.utime(f.fileno(), ns=(5, 6))
    st = os.stat(p)
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_mtime_ns == 6


def test_utime_omit(fs):
    p = os.path.join(fs, "f")
    open(p, "w").close()
    os.utime(p, ns=(111, 222))
    subprocess.run(["touch", "-a", "-d", "@5", p], check=True)  # atime set, mtime UTIME_OMIT
    st = os.stat(p)
    assert (st.st_atime_ns, st.st_mtime_ns) == (5_000_000_000, 222)
    subprocess.run(["touch", "-m", "-d", "@7", p], check=True)  # mtime set, atime UTIME_OMIT
    st = os.stat(p)
    assert (st.st_atime_ns, st.st_mtime_ns) == (5_000_000_000, 7_000_000_000)


def test_times_update(fs):
    p = os.path.join(fs, "f")
    open(p, "w").close()
    os.utime(p, ns=(0, 0))
    os.utime(fs, ns=(0, 0))
    with open(p, "w") as f:
        f.write("x")
    assert os.stat(p).st_mtime_ns > 0
    ctime = os.stat(p).st_ctime_ns
    time.sleep(0.01)
    os.chmod(p, 0o644)
    assert os.stat(p).st_ctime_ns > ctime
    open(os.path.join(fs, "g"), "w").close()
    assert os.stat(fs).st_mtime_ns > 0


def test_xattrs(fs):
    p = os.path.join(fs, "f")
    open(p, "w").close()
    os.setxattr(p, "user.a", b"1")
    os.setxattr(p, "user.b", b"x" * 3000)
    assert os.getxattr(p, "user.a") == b"1"
    assert os.getxattr(p, "user.b") == b"x" * 3000
    assert sorted(os.listxattr(p)) == ["user.a", "user.b"]
    assert err(os.setxattr, p, "user.a", b"2", os.XATTR_CREATE) == errno.EEXIST
    assert err(os.setxattr, p, "user.c", b"2", os.XATTR_REPLACE) == errno.ENODATA
    os.setxattr(p, "user.a", b"2", os.XATTR_REPLACE)
    assert os.getxattr(p, "user.a") == b"2"
    os.removexattr(p, "user.a")
    assert err(os.getxattr, p, "user.a") == errno.ENODATA
    assert err(os.removexattr, p, "user.a") == errno.ENODATA
    assert os.listxattr(p) == ["user.b"]


def test_statfs(fs):
    v = os.statvfs(fs)
    assert v.f_bsize == 4096 and v.f_blocks > 0 and v.f_namemax == 255
    with open(os.path.join(fs, "big"), "wb") as f:
        f.write(bytes(40 * 4096))
    assert v.f_bfree - os.statvfs(fs).f_bfree == 40  # closed files count too


def test_mknod_fifo(fs):
    p = os.path.join(fs, "fifo")
    os.mkfifo(p)
    assert stat.S_ISFIFO(os.stat(p).st_mode)


def test_unlinked_file_stays_readable(fs, request):
    p = os.path.join(fs, "f")
    with open(p, "w+b") as f:
        f.write(b"still here")
        os.unlink(p)
        assert os.listdir(fs) == []  # hard_remove: no .fuse_hidden file
        f.seek(0)
        assert f.read() == b"still here"
        f.write(b"!")
        f.seek(0)
        assert f.read() == b"still here!"
        if "memory_ll" in request.node.name:  # the inode API keeps the inode: as tmpfs
            st = os.fstat(f.fileno())
            assert st.st_nlink == 0 and st.st_size == 11
        else:  # libfuse's path-based API cannot stat a removed name (the example says so)
            assert err(os.fstat, f.fileno()) == errno.ESTALE


def test_fallocate_copy_file_range_lseek(fs):
    p = os.path.join(fs, "f")
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
    os.posix_fallocate(fd, 0, 8192)
    assert os.fstat(fd).st_size == 8192
    os.pwrite(fd, b"abc", 0)
    q = os.path.join(fs, "g")
    fd2 = os.open(q, os.O_RDWR | os.O_CREAT, 0o644)
    assert os.copy_file_range(fd, fd2, 3, 0, 10) == 3
    assert os.pread(fd2, 20, 0) == bytes(10) + b"abc"
    assert os.lseek(fd, 0, os.SEEK_DATA) == 0
    assert os.lseek(fd, 0, os.SEEK_HOLE) == 8192
    assert err(os.lseek, fd, 9000, os.SEEK_DATA) == errno.ENXIO
    os.close(fd)
    os.close(fd2)


SHUTIL_CLIENT = """
import json, os, shutil, sys
src, fs = sys.argv[1:3]
shutil.copytree(src, os.path.join(fs, "copy"))
walked = sorted(os.path.relpath(os.path.join(r, n), fs) for r, ds, f in os.walk(fs) for n in ds + f)
deep = open(os.path.join(fs, "copy", "a", "b", "f.txt")).read()
same = open(os.path.join(fs, "copy", "top.bin"), "rb").read() == open(
    os.path.join(src, "top.bin"), "rb").read()
shutil.rmtree(os.path.join(fs, "copy"))
print(json.dumps([walked, deep, same, os.listdir(fs)]))
"""


def test_listing_and_shutil(fs, tmp_path):
    """copytree, walk and rmtree, from another process: shutil and os.walk call
    os.DirEntry.is_dir()/stat(), which on Python 3.9 and 3.10 keep the GIL during the system
    call, and the mount is served by this process (docs/testing.md)."""
    src = tmp_path / "src"
    (src / "a" / "b").mkdir(parents=True)
    (src / "a" / "b" / "f.txt").write_text("deep")
    (src / "top.bin").write_bytes(os.urandom(100_000))
    r = subprocess.run([sys.executable, "-c", SHUTIL_CLIENT, str(src), fs], capture_output=True,
                       text=True, timeout=40)
    assert r.returncode == 0, r.stderr
    walked, deep, same, left = json.loads(r.stdout)
    assert walked == ["copy", "copy/a", "copy/a/b", "copy/a/b/f.txt", "copy/top.bin"]
    assert deep == "deep" and same and left == []


def test_many_entries(fs):
    d = os.path.join(fs, "d")
    os.mkdir(d)
    names = {f"file-{i:05d}" for i in range(1500)}
    for n in names:
        open(os.path.join(d, n), "w").close()
    assert set(os.listdir(d)) == names
    with os.scandir(d) as it:
        entries = {e.name: e.is_file() for e in it}
    assert entries == {n: True for n in names}


MMAP_CLIENT = '''
import mmap, sys
with open(sys.argv[1], "r+b") as f:
    m = mmap.mmap(f.fileno(), 8192)
    assert m[:4] == b"abcd"
    m[100:105] = b"hello"
    m.flush()
    m.close()
'''


def test_mmap(fs):
    # A page fault on a mount served by this very process would wait for a handler that needs
    # the GIL the faulting thread holds: mmap clients of an in-process mount run elsewhere.
    p = os.path.join(fs, "m")
    with open(p, "wb") as f:
        f.write(b"abcd" + bytes(8188))
    subprocess.run([sys.executable, "-c", MMAP_CLIENT, p], check=True, timeout=30)
    assert open(p, "rb").read()[100:105] == b"hello"


def test_fsync_flock_poll(fs):
    p = os.path.join(fs, "f")
    with open(p, "w") as f:
        f.write("x")
        f.flush()
        os.fsync(f.fileno())
        os.fdatasync(f.fileno())
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)  # kernel-local without a flock handler
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
        p_ = select.poll()
        p_.register(f.fileno(), select.POLLOUT)
        assert p_.poll(1000)


class _CountingWrites(Memory):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, path, data, offset, fh):
        self.writes += 1
        return super().write(path, data, offset, fh)


@pytest.mark.parametrize("writeback", [False, True])
def test_writeback_cache_gathers_small_writes(mount_ops, mnt, writeback):
    """Config(writeback_cache=True): the kernel caches writes and sends them later, in larger
    requests (here at close), instead of one WRITE per write(2)."""
    import dataclasses

    ops = _CountingWrites()
    mount_ops(ops, config=dataclasses.replace(CONFIG, writeback_cache=writeback))
    f = os.path.join(mnt, "f")
    fd = os.open(f, os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        for i in range(200):
            os.write(fd, bytes([65 + i % 26]) * 100)
    finally:
        os.close(fd)
    with open(f, "rb") as fp:
        data = fp.read()
    assert data == b"".join(bytes([65 + i % 26]) * 100 for i in range(200))
    if writeback:
        assert ops.writes <= 10, ops.writes
    else:
        assert ops.writes >= 200, ops.writes  # one or more for each write(2)


def test_exchange_of_two_names_of_one_inode_does_nothing(fs):
    """renameat2(RENAME_EXCHANGE) between two hard links of one file: as tmpfs, nothing
    changes, not even the directories' times (found by the tmpfs conformance test)."""
    import ctypes

    a, b = os.path.join(fs, "a"), os.path.join(fs, "b")
    os.mkdir(b)
    open(a, "w").close()
    os.link(a, os.path.join(b, "a"))
    before = os.stat(fs).st_mtime_ns, os.stat(b).st_mtime_ns
    time.sleep(0.01)
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.renameat2(-100, os.fsencode(a), -100, os.fsencode(os.path.join(b, "a")),
                          2) == 0  # AT_FDCWD, RENAME_EXCHANGE
    assert (os.stat(fs).st_mtime_ns, os.stat(b).st_mtime_ns) == before
