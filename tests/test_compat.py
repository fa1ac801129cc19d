"""pyfuse.compat: fusepy-style filesystems (tests/compat_fs/) run unchanged through
``import pyfuse.compat`` and ``python -m pyfuse.compat``, and a client sees what it sees on real
fusepy (libfuse 2) and real mfusepy (libfuse 3): the same client runs against each and the
transcripts are compared."""
from __future__ import annotations

import errno
import importlib.util
import json
import os
import stat
import subprocess
import sys
import time
from typing import Any, Callable, Iterator

import pytest

from pyfuse import is_mounted, testing

HERE = os.path.dirname(os.path.abspath(__file__))
FS = os.path.join(HERE, "compat_fs")

#: How each variant runs a script of compat_fs: argv prefix and environment.
VARIANTS: dict[str, tuple[list[str], dict[str, str]]] = {
    "runner": ([sys.executable, "-m", "pyfuse.compat"], {"FS_MODULE": "fuse"}),
    "import": ([sys.executable], {"FS_MODULE": "pyfuse.compat"}),
    "runner-m": ([sys.executable, "-m", "pyfuse.compat"], {"FS_MODULE": "mfusepy"}),
    "import-m": ([sys.executable], {"FS_MODULE": "pyfuse.compat.mfusepy"}),
    "fusepy": ([sys.executable], {"FS_MODULE": "fuse"}),
    "mfusepy": ([sys.executable], {"FS_MODULE": "mfusepy", "FUSE_LIBRARY_NAME": "fuse3"}),
}
OURS = ("runner", "import")
#: Each original and the two ways into its pyfuse.compat module.
FLAVORS = {"fusepy": ("fusepy", "runner", "import"),
           "mfusepy": ("mfusepy", "runner-m", "import-m")}


def _peer_missing(variant: str) -> str:
    """Why a real peer cannot run here ('' when it can); `make test` installs both."""
    module = {"fusepy": "fuse", "mfusepy": "mfusepy"}.get(variant)
    if module is None:
        return ""
    if importlib.util.find_spec(module) is None:
        return f"{variant} is not installed (pip install fusepy mfusepy)"
    if variant == "fusepy" and subprocess.run(
            [sys.executable, "-c", "import fuse"], capture_output=True).returncode != 0:
        return "fusepy cannot load libfuse 2 (apt-get install libfuse2)"
    return ""


@pytest.fixture
def serve(tmp_path: Any) -> Iterator[Callable[..., str]]:
    """serve(variant, script, *args) mounts compat_fs/script (its last argument is the mount
    point) the way ``variant`` runs it; unmounted at teardown."""
    stack: list[Any] = []

    def _serve(variant: str, script: str, *args: str) -> str:
        why = _peer_missing(variant)
        if why:
            pytest.fail(why)
        prefix, extra = VARIANTS[variant]
        env = dict(os.environ, **extra)
        log = str(tmp_path / f"{variant}-{script}.log")
        cm = testing.mounted_process([*prefix, os.path.join(FS, script), *args], args[-1],
                                     log=log, env=env)
        cm.__enter__()
        stack.append(cm)
        return args[-1]

    yield _serve
    while stack:
        stack.pop().__exit__(None, None, None)


def _errno(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except OSError as e:
        return errno.errorcode.get(e.errno or 0, str(e.errno))


def _files_transcript(mnt: str, links: bool = True) -> list[Any]:
    """What a client sees of a read-write filesystem: the same steps on every variant."""
    p = lambda *parts: os.path.join(mnt, *parts)  # noqa: E731
    out: list[Any] = []
    with open(p("a.txt"), "w") as f:
        f.write("hello\n")
    with open(p("a.txt"), "a") as f:
        f.write("world\n")
    out.append(open(p("a.txt")).read())
    st = os.stat(p("a.txt"))
    out.append((stat.filemode(st.st_mode), st.st_size, st.st_nlink))
    with open(p("a.txt"), "r+b") as f:
        f.seek(3)
        f.write(b"XY")
    out.append(open(p("a.txt"), "rb").read())
    os.truncate(p("a.txt"), 4)
    out.append((open(p("a.txt"), "rb").read(), os.stat(p("a.txt")).st_size))
    os.mkdir(p("d"), 0o750)
    out.append(stat.filemode(os.stat(p("d")).st_mode))
    with open(p("d", "inner"), "wb") as f:
        f.write(b"x" * 70000)
    out.append(len(open(p("d", "inner"), "rb").read()))
    out.append(sorted(os.listdir(mnt)))
    out.append(sorted(e.name for e in os.scandir(p("d"))))
    os.rename(p("d", "inner"), p("moved"))
    out.append((sorted(os.listdir(mnt)), os.listdir(p("d"))))
    os.symlink("a.txt", p("ln"))
    out.append((os.readlink(p("ln")), stat.S_ISLNK(os.lstat(p("ln")).st_mode)))
    os.chmod(p("a.txt"), 0o600)
    out.append(stat.filemode(os.stat(p("a.txt")).st_mode))
    os.utime(p("a.txt"), ns=(1_500_000_000_123_456_789, 1_600_000_000_987_654_321))
    st = os.stat(p("a.txt"))
    out.append((st.st_atime_ns, st.st_mtime_ns))
    out.append(_errno(lambda: os.stat(p("missing"))))
    out.append(_errno(lambda: open(p("missing")).read()))
    out.append(_errno(lambda: os.rmdir(mnt + "/d/..")))
    with open(p("d", "keep"), "w"):
        pass
    out.append(_errno(lambda: os.rmdir(p("d"))))
    if links:
        os.link(p("moved"), p("hard"))
        out.append(os.stat(p("hard")).st_size)
    os.unlink(p("moved"))
    os.unlink(p("d", "keep"))
    os.rmdir(p("d"))
    out.append(sorted(os.listdir(mnt)))
    return out


def _xattr_transcript(mnt: str) -> list[Any]:
    f = os.path.join(mnt, "x")
    open(f, "w").close()
    os.setxattr(f, "user.k", b"v1")
    os.setxattr(f, "user.j", b"v2")
    out = [os.getxattr(f, "user.k"), sorted(os.listxattr(f))]
    os.removexattr(f, "user.k")
    out.append(sorted(os.listxattr(f)))
    out.append(_errno(lambda: os.getxattr(f, "user.k")))
    return out


@pytest.mark.timeout(120)
@pytest.mark.parametrize("peer", ["fusepy", "mfusepy"])
def test_memory_behaves_as_on_the_peer(serve, tmp_path, peer):
    """fusepy's memory example (use_ns, xattrs; LoggingMixIn on fusepy, without it on mfusepy,
    whose LoggingMixIn hides create's signature, see the next test): one transcript on the
    real peer and on both ways into its pyfuse.compat module."""
    seen = {}
    args = () if peer == "fusepy" else ("--plain",)
    for variant in FLAVORS[peer]:
        mnt = tmp_path / variant
        mnt.mkdir()
        serve(variant, "memory.py", *args, str(mnt))
        seen[variant] = (_files_transcript(str(mnt), links=False),
                         _xattr_transcript(str(mnt)),
                         os.statvfs(str(mnt)).f_bsize)
    for variant in FLAVORS[peer][1:]:
        assert seen[variant] == seen[peer], variant


def _short_transcript(mnt: str) -> list[Any]:
    """Steps whose calls depend on the signatures: create (fusepy passes (path, mode); mfusepy
    also the flags unless create has two parameters), truncate by path and by descriptor
    (fusepy passes the fh then), a listing. Errors are recorded, not raised."""
    p = os.path.join(mnt, "f")
    out: list[Any] = []

    def create() -> Any:
        fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o640)
        os.write(fd, b"0123456789")
        os.close(fd)
        return "created"
    out.append(_errno(create))
    out.append(_errno(lambda: open(p, "rb").read()))
    out.append(_errno(lambda: os.truncate(p, 6)))

    def ftruncate() -> Any:
        with open(p, "r+b") as f:
            os.ftruncate(f.fileno(), 3)
        return os.stat(p).st_size
    out.append(_errno(ftruncate))
    out.append(sorted(os.listdir(mnt)))
    return out


@pytest.mark.timeout(120)
@pytest.mark.parametrize("flavor", ["fusepy", "mfusepy"])
def test_original_signatures_called_as_the_original_does(serve, tmp_path, flavor):
    """memory.py keeps fusepy's short ``create(self, path, mode)``; with and without
    LoggingMixIn, each original and its pyfuse.compat module call it alike: fusepy with two
    arguments (its LoggingMixIn's ``__call__`` included), mfusepy by the signature of the
    attribute, which its own LoggingMixIn (``__getattribute__``) turns into ``*args``: there
    mfusepy passes the flags and the create fails (EINVAL), on the original as on pyfuse."""
    for mixin in (True, False):
        seen = {}
        for variant in FLAVORS[flavor]:
            mnt = tmp_path / f"{variant}-{mixin}"
            mnt.mkdir()
            serve(variant, "memory.py", *(() if mixin else ("--plain",)), str(mnt))
            seen[variant] = _short_transcript(str(mnt))
        for variant in FLAVORS[flavor][1:]:
            assert seen[variant] == seen[flavor], (mixin, variant, seen)
        failed = flavor == "mfusepy" and mixin
        assert (seen[flavor][0] == "EINVAL") is failed, seen


@pytest.mark.timeout(120)
def test_loopback_with_its_own_call_behaves_as_on_fusepy(serve, tmp_path):
    """fusepy's loopback example reaches every operation through its own __call__ (which adds
    the source directory): the same files appear in the source as on fusepy."""
    seen = {}
    for variant in ("fusepy", *OURS):
        src, mnt = tmp_path / f"src-{variant}", tmp_path / f"mnt-{variant}"
        src.mkdir()
        mnt.mkdir()
        serve(variant, "loopback.py", str(src), str(mnt))
        seen[variant] = (_files_transcript(str(mnt)), sorted(os.listdir(src)))
    assert seen["runner"] == seen["fusepy"]
    assert seen["import"] == seen["fusepy"]
    assert seen["runner"][1] == ["a.txt", "hard", "ln"]


def _special_transcript(mnt: str) -> list[Any]:
    p = lambda *parts: os.path.join(mnt, *parts)  # noqa: E731
    out: list[Any] = [open(p("whoami")).read() == f"0 0 {os.getpid()}\n"]
    out.append(open(p("raw")).read())
    out.append(open(p("direct")).read())
    names = sorted(os.listdir(p("tuples")))
    out.append((len(names), names[:2]))
    out.append(all(e.is_file() for e in os.scandir(p("tuples"))))
    out.append(os.stat(p("tuples", "n0007")).st_size)  # getattr's, not the listing's
    listed = os.listdir(p("offsets"))
    out.append((len(listed), listed[:3], listed[-1]))
    out.append(os.stat(p("whoami")).st_mtime_ns)
    return out


@pytest.mark.timeout(120)
def test_raw_fi_context_tuples_and_offsets_behave_as_on_mfusepy(serve, tmp_path):
    """raw_fi objects that open() fills and later calls get back, fuse_get_context, readdir
    tuples with attributes, readdir_with_offset: as on mfusepy (fusepy has no
    readdir_with_offset), through both ways into pyfuse.compat.mfusepy."""
    seen = {}
    for variant in FLAVORS["mfusepy"]:
        mnt = tmp_path / variant
        mnt.mkdir()
        serve(variant, "special.py", str(mnt))
        seen[variant] = _special_transcript(str(mnt))
    assert seen["mfusepy"][0] is True
    assert seen["runner-m"] == seen["mfusepy"]
    assert seen["import-m"] == seen["mfusepy"]
    assert seen["runner-m"][1] == "/raw fh=1001 same=True direct_io=False\n"
    assert seen["runner-m"][2] == "/direct fh=1002 same=True direct_io=False\n"


def _special(tmp_path: Any, variant: str) -> tuple[str, list[str], dict[str, str]]:
    """A mount point, and the argv and environment that run special.py on it as ``variant``
    runs it (outside the serve fixture: these tests watch the process themselves)."""
    why = _peer_missing(variant)
    if why:
        pytest.fail(why)
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    prefix, extra = VARIANTS[variant]
    return mnt, [*prefix, os.path.join(FS, "special.py"), mnt], dict(os.environ, **extra)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("variant", ["runner", "mfusepy"])
def test_fuse_exit_ends_the_filesystem(tmp_path, variant):
    """fuse_exit() from a handler: the mount goes away and the program exits 0."""
    mnt, argv, env = _special(tmp_path, variant)
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        testing.wait_for_mount(mnt, 10, proc)
        try:
            with open(os.path.join(mnt, "exit"), "rb") as f:
                answer: Any = f.read()
        except OSError as e:  # mfusepy: the exit aborts the very request (or its close)
            answer = e.errno
        assert answer == b"bye\n" if variant == "runner" else answer in (
            b"bye\n", errno.ECONNABORTED, errno.ENOTCONN), answer
        assert proc.wait(20) == 0, proc.stderr.read() if proc.stderr else ""
        assert not is_mounted(mnt)
    finally:
        if is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", mnt])
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _wait_for_text(path: str, seconds: float = 10) -> str:
    """The text a daemon writes to ``path`` once its filesystem ended ('' if it never does)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if os.path.exists(path) and open(path).read():
            break
        time.sleep(0.05)
    return open(path).read() if os.path.exists(path) else ""


@pytest.mark.timeout(60)
@pytest.mark.parametrize("variant", ["runner", "fusepy"])
def test_foreground_false_daemonizes_as_fusepy(tmp_path, variant):
    """FUSE(foreground=False): the command returns 0 once the mount is live, the daemon serves
    on, and the code after FUSE() runs in the daemon after the unmount."""
    mnt, argv, env = _special(tmp_path, variant)
    _daemon_round_trip([*argv, "--daemon"], env, mnt,
                       lambda: "raw" in os.listdir(mnt), "served and unmounted\n")


def _daemon_round_trip(argv: list[str], env: Any, mnt: str, probe: Callable[[], bool],
                       after: str) -> None:
    """Run a daemon-mode program: it must return 0 with the mount live (``probe`` reads it),
    and, once unmounted, the daemon must write ``after`` to MNT.after."""
    try:
        r = subprocess.run(argv, env=env, capture_output=True, timeout=30)
        assert r.returncode == 0, r.stderr
        assert is_mounted(mnt)  # live when the command returned
        assert probe()
        subprocess.run(["fusermount3", "-u", mnt], check=True)
        assert _wait_for_text(mnt + ".after") == after
    finally:
        if is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", mnt])


@pytest.mark.timeout(60)
def test_foreground_false_mount_error_reaches_the_caller(tmp_path):
    """A mount that fails in daemon mode fails in the calling process, with the reason."""
    r = subprocess.run([sys.executable, "-m", "pyfuse.compat", os.path.join(FS, "special.py"),
                        str(tmp_path / "no-such-dir"), "--daemon"],
                       env=dict(os.environ, FS_MODULE="fuse"), capture_output=True, timeout=30)
    assert r.returncode != 0
    assert b"no-such-dir" in r.stderr and b"does not exist" in r.stderr, r.stderr


@pytest.mark.timeout(60)
def test_native_run_foreground_false(tmp_path):
    """pyfuse.run(ops, mnt, foreground=False): the same daemon mode for the native API."""
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    code = ("import pyfuse, sys\nfrom pyfuse.examples.hello import Hello\n"
            "pyfuse.run(Hello(), sys.argv[1], foreground=False)\n"
            "open(sys.argv[1] + '.after', 'w').write('done')\n")
    _daemon_round_trip([sys.executable, "-c", code, mnt], None, mnt,
                       lambda: open(os.path.join(mnt, "hello")).read() == "Hello World!\n",
                       "done")


@pytest.mark.timeout(60)
def test_runner_aliases_reach_child_pythons(tmp_path):
    """A test suite run through the runner starts its filesystems with sys.executable: there
    too ``import fuse``/``import mfusepy`` give pyfuse's modules (PYTHONPATH), and the
    program's own PYTHONPATH entries are kept."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import subprocess, sys\n"
        "code = 'import fuse, mfusepy, sys; print(fuse.__name__, mfusepy.__name__, "
        "sys.path[1:3])'\n"
        "print(subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,"
        " check=True).stdout, end='')\n")
    env = dict(os.environ, PYTHONPATH="/nonexistent/keep-me")
    r = subprocess.run([sys.executable, "-m", "pyfuse.compat", str(script)],
                       capture_output=True, text=True, timeout=30, env=env)
    assert r.returncode == 0, r.stderr
    names, _, path = r.stdout.partition(" [")
    assert names.split() == ["pyfuse.compat", "pyfuse.compat.mfusepy"], r.stdout
    assert "_aliases" in path and "/nonexistent/keep-me" in path, r.stdout


@pytest.mark.timeout(60)
def test_runner_runs_a_script_as_python_would(tmp_path):
    """sys.argv, __name__ and the exit status are the script's; fuse is pyfuse.compat and
    mfusepy pyfuse.compat.mfusepy."""
    script = tmp_path / "prog.py"
    script.write_text("import sys, fuse, mfusepy\nimport pyfuse.compat.mfusepy\n"
                      "assert fuse is pyfuse.compat and mfusepy is pyfuse.compat.mfusepy\n"
                      f"print(__name__, sys.argv[1:], sys.path[0] == {str(tmp_path)!r})\n"
                      "sys.exit(3)\n")
    r = subprocess.run([sys.executable, "-m", "pyfuse.compat", str(script), "a", "b"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 3, r.stderr
    assert r.stdout == "__main__ ['a', 'b'] True\n"
    r = subprocess.run([sys.executable, "-m", "pyfuse.compat", str(tmp_path / "nope.py")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "nope.py" in r.stderr


def _ls_l(mnt: str) -> tuple[list[int], dict[str, int]]:
    """What `ls -l` does (list, then lstat each), and the filesystem's getattr counts."""
    sizes = [os.lstat(e.path).st_size for e in os.scandir(mnt) if e.name.startswith("f")]
    return sizes, json.loads(open(os.path.join(mnt, "counts")).read())


@pytest.mark.timeout(60)
def test_readdirplus_asks_getattr_inside_the_listing(serve, tmp_path):
    """Bare names from readdir: under READDIRPLUS pyfuse.compat gets each entry's attributes
    from the filesystem's getattr inside the listing request, so `ls -l` sends no LOOKUP per
    entry; readdir_getattr=False leaves them to the kernel's LOOKUPs, as fusepy does, and so
    does entry_timeout=0, where the kernel looks every entry up again anyway."""
    on, off, nocache = tmp_path / "on", tmp_path / "off", tmp_path / "nocache"
    for d in (on, off, nocache):
        d.mkdir()
    serve("runner", "plus.py", str(on))
    serve("runner", "plus.py", "--no-getattr", str(off))
    serve("runner", "plus.py", "--nocache", str(nocache))
    sizes, counts = _ls_l(str(on))
    assert sizes == [5] * 300
    assert counts["listing"] == 300 and counts["lookup"] <= 3, counts
    for d in (off, nocache):
        sizes, counts = _ls_l(str(d))
        assert sizes == [5] * 300
        assert counts["listing"] == 0 and counts["lookup"] >= 300, (d, counts)


def _defaults_transcript(mnt: str) -> list[Any]:
    """Operations special.py does not implement: fusepy's base class answers them."""
    p = lambda *parts: os.path.join(mnt, *parts)  # noqa: E731
    out: list[Any] = [_errno(lambda: os.chmod(p("raw"), 0o600)),
                      _errno(lambda: os.mkdir(p("new"))),
                      _errno(lambda: os.unlink(p("raw"))),
                      _errno(lambda: os.rename(p("raw"), p("other"))),
                      _errno(lambda: os.symlink("raw", p("ln"))),
                      _errno(lambda: os.truncate(p("raw"), 0)),
                      _errno(lambda: os.utime(p("raw"), (1, 2))),
                      _errno(lambda: os.listxattr(p("raw"))),
                      _errno(lambda: os.getxattr(p("raw"), "user.x")),
                      _errno(lambda: open(p("new-file"), "w")),
                      _errno(lambda: open(p("bug")).read()),  # an unknown exception
                      _errno(lambda: os.stat(p("statbug")))]  # ... in getattr
    v = os.statvfs(mnt)
    out.append((v.f_blocks, v.f_files))
    return out


@pytest.mark.timeout(60)
def test_unimplemented_operations_answer_as_on_fusepy(serve, tmp_path):
    seen = {}
    for variant in ("fusepy", "runner"):
        mnt = tmp_path / variant
        mnt.mkdir()
        serve(variant, "special.py", str(mnt))
        seen[variant] = _defaults_transcript(str(mnt))
    assert seen["runner"] == seen["fusepy"]
    assert seen["runner"][0] == "EROFS"
    assert seen["runner"][-3] == seen["runner"][-2] == "EINVAL"


@pytest.mark.timeout(60)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fusepy's, for float times
def test_what_compat_cannot_serve_is_refused_by_name(tmp_path):
    """An operation with no pyfuse equivalent, or a libfuse 2 option libfuse 3 dropped: a
    clear error at mount time, nothing mounted."""
    import pyfuse.compat as fuse

    class Blocks(fuse.Operations):
        def bmap(self, path, blocksize, idx):
            return 0

    mnt = str(tmp_path)
    with pytest.raises(NotImplementedError, match=r"Blocks\.bmap"):
        fuse.FUSE(Blocks(), mnt, foreground=True)
    with pytest.raises(ValueError, match="large_read"):
        fuse.FUSE(fuse.Operations(), mnt, foreground=True, large_read=True)
    assert not is_mounted(mnt)


def _handles_transcript(mnt: str) -> list[Any]:
    """Each file's handle as its reads and writes get it back, and the write log."""
    out: list[Any] = []
    for k in range(6):
        p = os.path.join(mnt, f"h{k}")
        with open(p, "rb") as f:
            out.append(_errno(f.read))
        fd = os.open(p, os.O_WRONLY)
        try:
            out.append(_errno(lambda fd=fd, k=k: os.write(fd, b"w%d" % k)))
        finally:
            os.close(fd)
    with open(os.path.join(mnt, "log"), "rb") as f:
        out.append(f.read().decode())
    return out


@pytest.mark.timeout(120)
@pytest.mark.parametrize("flavor", ["fusepy", "mfusepy"])
def test_file_handles_of_all_64_bits_as_on_the_peer(serve, tmp_path, flavor):
    """A program's file handles reach its read and write as it gave them, bit 63 included
    (pyfuse's own APIs keep that bit for fd_backed files: a compat session does not, and
    2**63 | 3 must not become file descriptor 3)."""
    seen = {}
    for variant in FLAVORS[flavor]:
        mnt = tmp_path / variant
        mnt.mkdir()
        serve(variant, "handles.py", str(mnt))
        seen[variant] = _handles_transcript(str(mnt))
    original, runner, imported = FLAVORS[flavor]
    assert seen[original][8] == b"/h4 fh=%d\n" % (2**63 | 3), seen[original]
    assert seen[runner] == seen[original]
    assert seen[imported] == seen[original]
