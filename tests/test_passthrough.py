"""The passthrough example as a daemon over a real directory: contents, metadata and errors
must match the source."""
from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
import time

import pytest


@pytest.fixture
def pt(example, tmp_path, mnt):
    src = tmp_path / "src"
    src.mkdir()
    (src / "dir").mkdir()
    (src / "dir" / "file.txt").write_text("in the source")
    (src / "big.bin").write_bytes(os.urandom(3 * 1024 * 1024 + 17))
    os.symlink("dir/file.txt", src / "link")
    example("passthrough", str(src), mountpoint=mnt)
    return str(src), mnt


def _tree(root):
    out = {}
    for r, ds, fs in os.walk(root):
        for n in ds + fs:
            p = os.path.join(r, n)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode),
                                             st.st_size if not stat.S_ISDIR(st.st_mode) else 0,
                                             st.st_mtime_ns)
    return out


def test_mirror_matches_source(pt):
    src, mnt = pt
    assert _tree(mnt) == _tree(src)
    assert os.readlink(os.path.join(mnt, "link")) == "dir/file.txt"
    for name in ("big.bin", "dir/file.txt"):
        a = hashlib.sha256(open(os.path.join(src, name), "rb").read()).hexdigest()
        b = hashlib.sha256(open(os.path.join(mnt, name), "rb").read()).hexdigest()
        assert a == b


def test_writes_reach_source(pt):
    src, mnt = pt
    os.mkdir(os.path.join(mnt, "new"))
    with open(os.path.join(mnt, "new", "f"), "wb") as f:
        f.write(b"written through")
    assert open(os.path.join(src, "new", "f"), "rb").read() == b"written through"
    os.rename(os.path.join(mnt, "new", "f"), os.path.join(mnt, "g"))
    os.link(os.path.join(mnt, "g"), os.path.join(mnt, "h"))
    assert os.stat(os.path.join(src, "g")).st_nlink == 2
    os.chmod(os.path.join(mnt, "g"), 0o600)
    os.utime(os.path.join(mnt, "g"), ns=(123, 456_000_789))
    st = os.stat(os.path.join(src, "g"))
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_mtime_ns == 456_000_789
    os.truncate(os.path.join(mnt, "g"), 4)
    assert open(os.path.join(src, "g"), "rb").read() == b"writ"
    os.setxattr(os.path.join(mnt, "g"), "user.k", b"v")
    assert os.getxattr(os.path.join(src, "g"), "user.k") == b"v"
    assert "user.k" in os.listxattr(os.path.join(mnt, "g"))
    os.removexattr(os.path.join(mnt, "g"), "user.k")
    os.symlink("g", os.path.join(mnt, "sl"))
    assert os.readlink(os.path.join(src, "sl")) == "g"
    os.mkfifo(os.path.join(mnt, "fifo"))
    assert stat.S_ISFIFO(os.lstat(os.path.join(src, "fifo")).st_mode)
    for n in ("g", "h", "sl", "fifo"):
        os.unlink(os.path.join(mnt, n))
    os.rmdir(os.path.join(mnt, "new"))
    assert sorted(os.listdir(src)) == sorted(os.listdir(mnt)) == ["big.bin", "dir", "link"]


def test_errors_pass_through(pt):
    src, mnt = pt
    cases = [
        (os.stat, (os.path.join(mnt, "missing"),), errno.ENOENT),
        (os.rmdir, (os.path.join(mnt, "dir"),), errno.ENOTEMPTY),
        (os.mkdir, (os.path.join(mnt, "dir"),), errno.EEXIST),
        (os.unlink, (os.path.join(mnt, "dir"),), errno.EISDIR),
        (os.getxattr, (os.path.join(mnt, "big.bin"), "user.none"), errno.ENODATA),
    ]
    for fn, args, code in cases:
        with pytest.raises(OSError) as ei:
            fn(*args)
        assert ei.value.errno == code, fn


def test_copytree_and_statfs(pt, tmp_path):
    src, mnt = pt
    shutil.copytree(os.path.join(mnt, "dir"), os.path.join(mnt, "dir2"))
    assert open(os.path.join(src, "dir2", "file.txt")).read() == "in the source"
    v, w = os.statvfs(mnt), os.statvfs(src)
    assert (v.f_bsize, v.f_blocks) == (w.f_bsize, w.f_blocks)
    fd = os.open(os.path.join(mnt, "big.bin"), os.O_RDONLY)
    out = os.open(os.path.join(mnt, "copy.bin"), os.O_WRONLY | os.O_CREAT, 0o644)
    n = os.copy_file_range(fd, out, 1000, 0, 0)
    os.close(fd)
    os.close(out)
    assert n == 1000
    assert open(os.path.join(src, "copy.bin"), "rb").read() == open(
        os.path.join(src, "big.bin"), "rb").read()[:1000]


def test_paths_near_path_max(example, tmp_path, mnt):
    """A path that fits PATH_MAX in the mount works below it too, even where SOURCE + path
    would not: the example resolves paths relative to a descriptor of SOURCE."""
    src = tmp_path / ("s" * 200) / ("o" * 200)
    src.mkdir(parents=True)
    example("passthrough", str(src), mountpoint=mnt)
    room = 4095 - len(mnt) - 1 - 20                    # the client's own path stays legal
    depth, part = divmod(room, 201)
    rel = "/".join(["d" * 200] * depth)
    os.makedirs(os.path.join(mnt, rel))
    assert len(str(src)) + 1 + len(rel) > 4095         # SOURCE + path would be too long
    f = os.path.join(mnt, rel, "f" * 10)
    with open(f, "w") as fp:
        fp.write("deep")
    assert os.stat(f).st_size == 4
    os.rename(f, f + "x")
    assert open(f + "x").read() == "deep"
    os.unlink(f + "x")
    assert os.listdir(os.path.join(mnt, rel)) == []


def test_same_size_truncate_keeps_times(tmpfs, example, mnt):
    """truncate(2) of an empty file to size 0 changes no time on tmpfs; ftruncate(2) stamps
    them. Over a tmpfs source the example must give what truncate(2) gives (it used
    ftruncate for a while: CI's conformance run against tmpfs found it)."""
    src = tmpfs()
    example("passthrough", src, mountpoint=mnt)
    f = os.path.join(mnt, "empty")
    open(f, "w").close()
    before = os.stat(os.path.join(src, "empty"))
    time.sleep(0.05)  # beyond the coarse clock's tick
    os.truncate(f, 0)
    after = os.stat(os.path.join(src, "empty"))
    assert (after.st_mtime_ns, after.st_ctime_ns) == (before.st_mtime_ns, before.st_ctime_ns)
    with open(f, "w") as fp:
        fp.write("12345")
    os.truncate(f, 2)
    assert open(f).read() == "12"
