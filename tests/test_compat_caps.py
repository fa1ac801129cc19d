"""The connection a program of each foreign API gets is the one its original gets: libfuse 2's
for fusepy, mfusepy (on libfuse 2, which mfusepy itself prefers) and llfuse, libfuse 3's with
pyfuse3's own choices for pyfuse3. Read from the INIT reply's flags in libfuse's trace (the
same program, tests/compat_fs/initflags.py, on the original and through the runner), and seen
by a client: a file rewritten with open(O_TRUNC) is truncated for programs whose ``open``
ignores O_TRUNC, as it is on their originals (libfuse 3's atomic_o_trunc puts O_TRUNC into
OPEN, and such a program would leave the old bytes behind). And pyfuse's own Config says
which of these capabilities a native filesystem asks for."""
from __future__ import annotations

import errno
import importlib.util
import logging
import os
import re
import stat
import subprocess
import sys
from typing import Any

import pytest

import pyfuse
import pyfuse.lowlevel as ll
from pyfuse import testing

HERE = os.path.dirname(os.path.abspath(__file__))
FS = os.path.join(HERE, "compat_fs")
RUNNER = [sys.executable, "-m", "pyfuse.compat"]

# The kernel's INIT flags (linux/fuse.h)
ASYNC_READ, ATOMIC_O_TRUNC, EXPORT_SUPPORT, BIG_WRITES = 1 << 0, 1 << 3, 1 << 4, 1 << 5
IOCTL_DIR, AUTO_INVAL_DATA, DO_READDIRPLUS, READDIRPLUS_AUTO = 1 << 11, 1 << 12, 1 << 13, 1 << 14
ASYNC_DIO, PARALLEL_DIROPS, HANDLE_KILLPRIV = 1 << 15, 1 << 18, 1 << 19
MAX_PAGES, INIT_EXT = 1 << 22, 1 << 30
#: What may differ without a client seeing it: the size of writes (libfuse 2's big_writes,
#: libfuse 3's max_pages) and the protocol's extension flag.
SIZES = BIG_WRITES | MAX_PAGES | INIT_EXT
#: libfuse 3 turns these on by default; libfuse 2 never asked for them.
FUSE3_ONLY = (ATOMIC_O_TRUNC | AUTO_INVAL_DATA | ASYNC_DIO | PARALLEL_DIROPS | HANDLE_KILLPRIV
              | IOCTL_DIR)
REPLY = re.compile(r"   flags=0x([0-9a-f]+)")


def _init_flags(cmd: list[str], mnt: str, log: str, env: Any = None) -> int:
    """The flags of the INIT reply of the filesystem ``cmd`` serves at ``mnt``."""
    with testing.mounted_process(cmd, mnt, log=log, env=env):
        os.stat(mnt)
    found = REPLY.findall(open(log).read())
    assert found, open(log).read()[-2000:]
    return int(found[0], 16)


def _original_missing(api: str) -> str:
    module = {"fusepy": "fuse", "mfusepy": "mfusepy", "pyfuse3": "pyfuse3"}[api]
    if importlib.util.find_spec(module) is None:
        return f"{api} is not installed (the test extra installs it)"
    if subprocess.run([sys.executable, "-c", f"import {module}"],
                      capture_output=True).returncode != 0:
        return f"{api} cannot load its libfuse (apt-get install libfuse2)"
    return ""


@pytest.mark.timeout(60)
@pytest.mark.parametrize("api", ["fusepy", "mfusepy", "pyfuse3"])
def test_init_flags_as_on_the_original(tmp_path: Any, api: str) -> None:
    if api == "pyfuse3" and sys.version_info < (3, 10):
        pytest.skip("pyfuse3 3.5 needs Python >= 3.10")
    why = _original_missing(api)
    if why:
        pytest.fail(why)
    env = dict(os.environ, FUSE_LIBRARY_NAME="fuse")  # mfusepy: libfuse 2, its own choice
    seen = {}
    for how, prefix in (("original", [sys.executable]), ("pyfuse", RUNNER)):
        mnt = str(tmp_path / how)
        os.mkdir(mnt)
        seen[how] = _init_flags([*prefix, os.path.join(FS, "initflags.py"), api, mnt], mnt,
                                str(tmp_path / f"{how}.log"), env)
    # readdirplus is pyfuse's own addition for fusepy programs (libfuse 2 had none): their
    # listings carry attributes, and the kernel asks for fewer lookups
    extra = DO_READDIRPLUS | READDIRPLUS_AUTO if api != "pyfuse3" else 0
    assert seen["pyfuse"] & ~(SIZES | extra) == seen["original"] & ~SIZES, \
        {k: hex(v) for k, v in seen.items()}
    if api != "pyfuse3":
        assert not seen["pyfuse"] & FUSE3_ONLY


@pytest.mark.timeout(60)
def test_llfuse_face_asks_what_libfuse2_asks(tmp_path: Any) -> None:
    """llfuse 1.5.2 itself asks for ASYNC_READ and BIG_WRITES only (0x21: measured with this
    program; `make test-originals` compares with it): none of libfuse 3's defaults."""
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    flags = _init_flags([*RUNNER, os.path.join(FS, "initflags.py"), "llfuse", mnt], mnt,
                        str(tmp_path / "llfuse.log"))
    assert flags & ~SIZES == ASYNC_READ, hex(flags)


def _rewrite(mnt: str) -> list[Any]:
    """Write a file, write it again through open(..., "w"), truncate it with O_TRUNC."""
    p = os.path.join(mnt, "f")
    with open(p, "w") as f:
        f.write("hello world")
    with open(p, "w") as f:
        f.write("hi")
    out: list[Any] = [open(p).read()]
    os.close(os.open(p, os.O_WRONLY | os.O_TRUNC))
    out.append(os.stat(p).st_size)
    return out


@pytest.mark.timeout(90)
@pytest.mark.parametrize("api", ["fusepy", "mfusepy"])
def test_o_trunc_as_on_the_original(tmp_path: Any, api: str) -> None:
    """compat_fs/memory.py's open ignores O_TRUNC, as fusepy's example does: the original
    (libfuse 2) truncates through truncate(), and so does pyfuse."""
    why = _original_missing(api)
    if why:
        pytest.fail(why)
    seen = {}
    module = {"fusepy": "fuse", "mfusepy": "mfusepy"}[api]
    for how, prefix in (("original", [sys.executable]), ("pyfuse", RUNNER)):
        mnt = str(tmp_path / how)
        os.mkdir(mnt)
        env = dict(os.environ, FS_MODULE=module, FUSE_LIBRARY_NAME="fuse")
        with testing.mounted_process([*prefix, os.path.join(FS, "memory.py"), "--plain", mnt],
                                     mnt, log=str(tmp_path / f"{how}.log"), env=env):
            seen[how] = _rewrite(mnt)
    assert seen["original"] == ["hi", 0]
    assert seen["pyfuse"] == seen["original"]


@pytest.mark.timeout(60)
def test_o_trunc_on_the_llfuse_face(tmp_path: Any) -> None:
    """An llfuse program whose open ignores its flags (as llfuse's examples/tmpfs.py):
    O_TRUNC reaches it as a setattr of the size, as on llfuse (libfuse 2)."""
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    with testing.mounted_process([*RUNNER, os.path.join(FS, "lltmp.py"), mnt], mnt,
                                 log=str(tmp_path / "lltmp.log")):
        assert _rewrite(mnt) == ["hi", 0]


@pytest.mark.timeout(60)
def test_names_are_the_kernels_bytes_on_the_llfuse_face(tmp_path: Any) -> None:
    """An llfuse program gets names as bytes, UTF-8 or not, as on llfuse (tests/compat_fs/
    lltmp.py fails a request whose name is not ``bytes``)."""
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    names = [b"caf\xe9", b"\xff\xfe", "na\u00efve".encode()]
    with testing.mounted_process([*RUNNER, os.path.join(FS, "lltmp.py"), mnt], mnt,
                                 log=str(tmp_path / "lltmp.log")):
        b = os.fsencode(mnt)
        for n in names:
            with open(os.path.join(b, n), "wb") as f:
                f.write(n)
        assert sorted(os.listdir(b)) == sorted(names)
        for n in names:
            assert open(os.path.join(b, n), "rb").read() == n
            assert os.stat(os.path.join(b, n)).st_size == len(n)
        with pytest.raises(FileNotFoundError):
            os.stat(os.path.join(b, b"caf\xe9x"))


class Recorder(pyfuse.Operations):
    """One file; records the flags open gets and the sizes truncate gets."""

    def __init__(self) -> None:
        self.data = b"hello world"
        self.opens: list[int] = []
        self.truncates: list[int] = []

    def getattr(self, path: str, fh: Any) -> pyfuse.Attr:
        if path == "/":
            return pyfuse.Attr(mode=stat.S_IFDIR | 0o755, nlink=2)
        if path == "/f":
            return pyfuse.Attr(mode=stat.S_IFREG | 0o644, size=len(self.data))
        raise pyfuse.FuseError(errno.ENOENT)

    def open(self, path: str, flags: int) -> int:
        self.opens.append(flags)
        if flags & os.O_TRUNC:
            self.data = b""
        return 1

    def truncate(self, path: str, size: int, fh: Any) -> None:
        self.truncates.append(size)
        self.data = self.data[:size]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("atomic", [None, False])
def test_config_atomic_o_trunc(mount_ops: Any, mnt: str, atomic: Any) -> None:
    ops = Recorder()
    mount_ops(ops, config=pyfuse.Config(attr_timeout=0, entry_timeout=0,
                                        atomic_o_trunc=atomic))
    os.close(os.open(os.path.join(mnt, "f"), os.O_WRONLY | os.O_TRUNC))
    assert os.stat(os.path.join(mnt, "f")).st_size == 0
    if atomic is None:  # libfuse 3's default: O_TRUNC in the OPEN, no truncate
        assert ops.opens[-1] & os.O_TRUNC and ops.truncates == []
    else:
        assert not ops.opens[-1] & os.O_TRUNC and ops.truncates == [0]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("api", ["path", "inode"])
def test_config_capabilities_reach_the_init_reply(tmp_path: Any, caplog: Any,
                                                  api: str) -> None:
    """Config(**Config.FUSE2) declines every capability libfuse 2 did not ask for; the default
    Config leaves libfuse 3's (ATOMIC_O_TRUNC on, where this kernel offers it)."""
    caplog.set_level(logging.DEBUG, logger="pyfuse")
    seen = []
    for config in (pyfuse.Config(), pyfuse.Config(**pyfuse.Config.FUSE2)):
        mnt = str(tmp_path / f"m{len(seen)}")
        os.mkdir(mnt)
        caplog.clear()
        if api == "path":
            cm: Any = testing.mounted(Recorder(), mnt, debug=True, config=config)
        else:
            cm = ll.mount(ll.Operations(), mnt, debug=True, config=config)
        with cm:
            try:
                os.stat(mnt)  # answered after INIT (ENOSYS from the bare inode API)
            except OSError:
                pass
        flags = REPLY.findall(caplog.text)
        assert flags, caplog.text[-2000:]
        seen.append(int(flags[0], 16))
    default, fuse2 = seen
    assert default & ATOMIC_O_TRUNC and default & AUTO_INVAL_DATA, hex(default)
    assert not fuse2 & FUSE3_ONLY, hex(fuse2)


def test_capabilities_from_mount_options() -> None:
    """A mount option named like a capability sets it (as libfuse 2's -o atomic_o_trunc)."""
    from pyfuse._core.mounting import _split_options
    opts, config = _split_options({"atomic_o_trunc": True, "async_dio": "0", "noatime": True},
                                  pyfuse.Config(**pyfuse.Config.FUSE2))
    assert opts == {"noatime": True}
    assert config.atomic_o_trunc is True and config.async_dio is False
    assert config.auto_inval_data is False
