"""The error policy on a real mount: each exception kind and each wrong return type gives the
documented errno and log, and the mount keeps serving through hundreds of failures."""
from __future__ import annotations

import errno
import logging
import os
import stat

import pytest

import pyfuse
from pyfuse import Attr, FuseError

pytestmark = pytest.mark.expect_errors


class Faulty(pyfuse.Operations):
    """getattr of /NAME behaves as NAME says; everything else is a plain file."""

    def getattr(self, path, fh):
        name = path.lstrip("/")
        if path == "/":
            return Attr(mode=stat.S_IFDIR | 0o755, nlink=2)
        if name == "fuseerror":
            raise FuseError(errno.EROFS)
        if name == "oserror":
            os.lstat("/nonexistent/really")  # FileNotFoundError passes through
        if name == "oserror_noerrno":
            raise OSError("no errno here")
        if name in IMPLIED:
            raise IMPLIED[name][0](f"{name} without an errno")
        if name == "notimpl":
            raise NotImplementedError
        if name == "runtime":
            raise RuntimeError("boom")
        if name == "keyerror":
            return {}["x"]
        if name == "badtype":
            return "not an attr"
        if name == "badrange":
            return Attr(mode=-1)
        if name == "none":
            return None
        if name == "stat_result":
            return os.stat("/")
        return Attr(mode=stat.S_IFREG | 0o644, size=5)

    def open(self, path, flags):
        if path == "/badopen":
            return "fh"
        return 7

    def read(self, path, size, offset, fh):
        if path == "/toolong":
            return b"x" * (size + 1)
        if path == "/notbytes":
            return 12345
        if path == "/bytearray":
            return bytearray(b"abcde")[offset:offset + size]
        if path == "/memoryview":
            return memoryview(b"abcde")[offset:offset + size]
        return b"hello"[offset:offset + size]

    def write(self, path, data, offset, fh):
        if path == "/badwrite":
            return len(data) + 1
        if path == "/strwrite":
            return "ok"
        return len(data)

    def readdir(self, path, offset, fh, plus):
        yield from [".", "..", "fuseerror", "runtime"]


IMPLIED = {"fnf": (FileNotFoundError, errno.ENOENT), "perm": (PermissionError, errno.EACCES),
           "exists": (FileExistsError, errno.EEXIST), "isdir": (IsADirectoryError, errno.EISDIR),
           "notdir": (NotADirectoryError, errno.ENOTDIR),
           "timeout": (TimeoutError, errno.ETIMEDOUT),
           "reset": (ConnectionResetError, errno.ECONNRESET)}


def _errno(fn, *args):
    with pytest.raises(OSError) as ei:
        fn(*args)
    return ei.value.errno


@pytest.fixture
def fs(mount_ops, mnt):
    mount_ops(Faulty(), config=pyfuse.Config(attr_timeout=0, entry_timeout=0))
    return mnt


def test_exception_kinds(fs, caplog):
    p = lambda n: os.path.join(fs, n)  # noqa: E731
    assert _errno(os.stat, p("fuseerror")) == errno.EROFS
    assert _errno(os.stat, p("oserror")) == errno.ENOENT
    assert _errno(os.stat, p("notimpl")) == errno.ENOSYS
    caplog.clear()
    assert _errno(os.stat, p("runtime")) == errno.EIO
    tracebacks = [r for r in caplog.records if r.name == "pyfuse" and r.exc_info]
    assert len(tracebacks) == 1 and "RuntimeError" in caplog.text and "boom" in caplog.text
    assert _errno(os.stat, p("keyerror")) == errno.EIO
    assert _errno(os.stat, p("oserror_noerrno")) == errno.EIO
    assert os.stat(p("stat_result")).st_mode == os.stat("/").st_mode


def test_oserror_subclass_without_errno_gives_its_errno(fs, caplog):
    """``raise FileNotFoundError("msg")`` (no errno set) answers ENOENT, nothing logged."""
    caplog.clear()
    for name, (_, want) in IMPLIED.items():
        assert _errno(os.stat, os.path.join(fs, name)) == want, name
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_config_refuses_bad_timeouts():
    for bad in (-1, float("nan"), float("inf"), "1", True):
        with pytest.raises(ValueError, match="entry_timeout must be a finite number"):
            pyfuse.Config(entry_timeout=bad)
    with pytest.raises(ValueError, match="negative_timeout"):
        pyfuse.Config(negative_timeout=-0.5)
    with pytest.raises(ValueError, match="attr_timeout"):
        pyfuse.run(Faulty(), "/nonexistent", options={"attr_timeout": "-1"})


def test_wrong_return_types(fs, caplog):
    p = lambda n: os.path.join(fs, n)  # noqa: E731
    for name in ("badtype", "badrange", "none"):
        caplog.clear()
        assert _errno(os.stat, p(name)) == errno.EIO
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert errors and "getattr" in errors[0].getMessage()
    caplog.clear()
    assert _errno(open, p("badopen")) == errno.EIO
    assert "open must return" in caplog.text
    with open(p("toolong"), "rb") as f:
        assert _errno(f.read) == errno.EIO
    assert "more than the" in caplog.text
    with open(p("notbytes"), "rb") as f:
        assert _errno(f.read) == errno.EIO
    with open(p("bytearray"), "rb") as f:
        assert f.read() == b"abcde"
    with open(p("memoryview"), "rb") as f:
        assert f.read() == b"abcde"
    fd = os.open(p("badwrite"), os.O_WRONLY)
    assert _errno(os.write, fd, b"data") == errno.EIO
    os.close(fd)
    fd = os.open(p("strwrite"), os.O_WRONLY)
    assert _errno(os.write, fd, b"data") == errno.EIO
    os.close(fd)


def test_hundreds_of_failures_keep_serving(fs):
    for _ in range(300):
        assert _errno(os.stat, os.path.join(fs, "runtime")) == errno.EIO
        assert _errno(os.stat, os.path.join(fs, "fuseerror")) == errno.EROFS
    assert open(os.path.join(fs, "fine"), "rb").read() == b"hello"
    assert sorted(os.listdir(fs)) == ["fuseerror", "runtime"]


class Interrupting(pyfuse.Operations):
    def getattr(self, path, fh):
        if path == "/stop":
            raise KeyboardInterrupt
        return Attr(mode=stat.S_IFDIR | 0o755, nlink=2)


def test_keyboard_interrupt_in_handler_stops_and_reraises(mnt):
    cm = pyfuse.mount(Interrupting(), mnt)
    cm.__enter__()
    assert os.path.isdir(mnt)
    with pytest.raises(OSError):
        os.stat(os.path.join(mnt, "stop"))
    with pytest.raises(KeyboardInterrupt):
        cm.__exit__(None, None, None)
    assert not pyfuse.is_mounted(mnt)


def test_fuse_error_is_oserror():
    e = FuseError(errno.ENOENT)
    assert isinstance(e, OSError) and e.errno == errno.ENOENT and "No such file" in str(e)


def test_errors_name_the_operation_and_path(fs, caplog):
    """A handler's traceback and a bad return value are logged with the operation and the
    path they happened on, in one line a user can act on."""
    for name, what in (("runtime", "raised RuntimeError"),
                       ("badtype", "getattr returned an invalid attribute object")):
        caplog.clear()
        with pytest.raises(OSError):
            os.stat(os.path.join(fs, name))
        line = next(r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR)
        assert line.startswith(f"getattr '/{name}'") and what in line, line
    caplog.clear()
    with pytest.raises(OSError):
        open(os.path.join(fs, "badopen"))
    line = next(r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR)
    assert line.startswith("open '/badopen': open must return"), line


_FILE = Attr(mode=stat.S_IFREG | 0o644)


class _BadName(pyfuse.Operations):
    def getattr(self, path, fh):
        return Attr(mode=(stat.S_IFDIR | 0o755) if path == "/" else stat.S_IFREG | 0o644)

    def readdir(self, path, offset, fh, plus):
        return [".", "..", "good", "bad/name"]


def test_readdir_error_names_the_entry(mount_ops, mnt, caplog):
    mount_ops(_BadName())
    with pytest.raises(OSError):
        os.listdir(mnt)
    line = next(r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR)
    assert line.startswith("readdir '/': readdir yielded an invalid name") and \
        "entry 3 of the listing ('bad/name')" in line, line


class _BadNumbers(_BadName):
    def __init__(self, entries):
        super().__init__()
        self.entries = entries

    def readdir(self, path, offset, fh, plus):
        return self.entries


@pytest.mark.parametrize("entries, said", [
    ([("a", None, 1), ("b", None, 2.5)], "readdir yielded an invalid offset: 2.5"),
    ([("a", None, 1), ("b", None, 1 << 63)],
     f"readdir yielded an invalid offset: {1 << 63}"),
    ([("a", _FILE, 0, 7), ("b", _FILE, 0, -1)], "readdir yielded an invalid inode number: -1"),
])
def test_readdir_error_names_the_bad_number(mount_ops, mnt, caplog, entries, said):
    """An offset or inode number that is no 64-bit integer fails the listing (EIO) with a
    line naming the value."""
    mount_ops(_BadNumbers(entries))
    with pytest.raises(OSError) as ei:
        os.listdir(mnt)
    assert ei.value.errno == errno.EIO
    line = next(r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR)
    assert line == f"readdir '/': {said}", line


def test_libfuse_message_is_one_record(mnt, caplog):
    """libfuse prints some messages in pieces; the logger gets each message whole."""
    with pytest.raises(ValueError, match="bogusopt"):
        pyfuse.Session(_BadName(), mnt, options={"bogusopt": True}).mount()
    msgs = [r.getMessage() for r in caplog.records if r.name == "pyfuse"
            and r.getMessage().startswith("libfuse:")]
    assert any("unknown option" in m and "bogusopt" in m for m in msgs), msgs
