"""pyfuse.compat.pyfuse3: a filesystem written against pyfuse3's API (tests/compat_fs/p3fs.py)
runs unchanged under trio and asyncio, through ``python -m pyfuse.compat`` and through
``import pyfuse.compat.pyfuse3``, and a client sees what it sees on the real pyfuse3 3.5
(same client, transcripts compared). pyfuse3's own test suite is run unchanged by
``make test-originals``."""
from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any, Callable, Iterator

import pytest
from test_async_readdir import entries_per_read  # noqa: E402
from test_compat import FS, _files_transcript, _xattr_transcript  # noqa: E402

from pyfuse import testing

VARIANTS: dict[str, tuple[list[str], list[str], str]] = {
    "pyfuse3": ([sys.executable], [], "pyfuse3"),
    "pyfuse3-asyncio": ([sys.executable], ["--asyncio"], "pyfuse3"),
    "runner": ([sys.executable, "-m", "pyfuse.compat"], [], "pyfuse3"),
    "runner-asyncio": ([sys.executable, "-m", "pyfuse.compat"], ["--asyncio"], "pyfuse3"),
    "import": ([sys.executable], [], "pyfuse.compat.pyfuse3"),
}


@pytest.fixture
def serve(tmp_path: Any) -> Iterator[Callable[[str], str]]:
    stack: list[Any] = []

    def _serve(variant: str) -> str:
        prefix, args, module = VARIANTS[variant]
        if module == "pyfuse3" and not variant.startswith("runner") \
                and importlib.util.find_spec("pyfuse3") is None:
            pytest.fail("pyfuse3 is not installed (the test extra installs it on Python "
                        ">= 3.10, which pyfuse3 3.5 requires)")
        mnt = str(tmp_path / variant)
        os.mkdir(mnt)
        env = dict(os.environ, PYFUSE3_MODULE=module)
        cm = testing.mounted_process([*prefix, os.path.join(FS, "p3fs.py"), *args, mnt], mnt,
                                     log=str(tmp_path / f"{variant}.log"), env=env)
        cm.__enter__()
        stack.append(cm)
        return mnt

    yield _serve
    while stack:
        stack.pop().__exit__(None, None, None)


ODD_NAMES = [b"caf\xe9", b"\xff\xfe", "na\u00efve".encode()]  # two not UTF-8, one UTF-8


def _names_transcript(mnt: str) -> list[Any]:
    """Names as the kernel's bytes, UTF-8 or not: created, read, listed, renamed, removed
    (the filesystem fails any request whose name is not ``bytes``, as on pyfuse3)."""
    b = os.fsencode(mnt)
    out: list[Any] = []
    for n in ODD_NAMES:
        with open(os.path.join(b, n), "wb") as f:
            f.write(n)
        out.append((os.stat(os.path.join(b, n)).st_size, open(os.path.join(b, n), "rb").read()))
    out.append(sorted(n for n in os.listdir(b) if n in ODD_NAMES))
    os.rename(os.path.join(b, b"caf\xe9"), os.path.join(b, b"\xe9t\xe9"))
    os.setxattr(os.path.join(b, b"\xff\xfe"), b"user.\xe9", b"v")
    out.append((sorted(os.listdir(b)), os.getxattr(os.path.join(b, b"\xff\xfe"), b"user.\xe9")))
    for n in (b"\xe9t\xe9", *ODD_NAMES[1:]):
        os.unlink(os.path.join(b, n))
    out.append(sorted(os.listdir(b)))
    return out


@pytest.mark.timeout(120)
@pytest.mark.skipif(sys.version_info < (3, 10), reason="pyfuse3 3.5 needs Python >= 3.10")
def test_pyfuse3_filesystem_behaves_as_on_pyfuse3(serve: Any) -> None:
    seen = {}
    for variant in VARIANTS:
        mnt = serve(variant)
        seen[variant] = (_files_transcript(mnt, links=False), _xattr_transcript(mnt),
                         os.statvfs(mnt).f_blocks, _names_transcript(mnt))
    for variant in ("runner", "runner-asyncio", "import"):
        assert seen[variant] == seen["pyfuse3"], variant
    assert seen["pyfuse3-asyncio"] == seen["pyfuse3"]


def _listing_lookups(serve: Any, drop_caches: bool) -> dict[str, int]:
    """On pyfuse3 and through the runner (trio, asyncio): /d made with 20 files of sizes 0 to
    19, the lookups that ``scandir`` + ``stat`` of /d then asks the filesystem for (after the
    kernel forgot the names the creations cached, with ``drop_caches``)."""
    calls = {}
    for variant in ("pyfuse3", "runner", "runner-asyncio"):
        mnt = serve(variant)
        d = os.path.join(mnt, "d")
        os.mkdir(d)
        for i in range(20):
            with open(os.path.join(d, f"f{i:02d}"), "wb") as f:
                f.write(b"x" * i)
        if drop_caches:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("2")
        before = int(os.getxattr(mnt, "user.p3fs.lookups"))
        with os.scandir(d) as it:
            sizes = sorted(e.stat(follow_symlinks=False).st_size for e in it)
        assert sizes == list(range(20))
        calls[variant] = int(os.getxattr(mnt, "user.p3fs.lookups")) - before
    return calls


@pytest.mark.timeout(120)
@pytest.mark.skipif(sys.version_info < (3, 10), reason="pyfuse3 3.5 needs Python >= 3.10")
def test_listings_carry_attributes_as_on_pyfuse3(serve: Any, monkeypatch: Any) -> None:
    """pyfuse3 answers READDIRPLUS (every listed entry comes with its attributes and counts a
    lookup): with names cached, ``ls -l`` of a directory asks the filesystem for no lookup,
    on pyfuse3 and on pyfuse.compat.pyfuse3 alike."""
    monkeypatch.setenv("P3FS_TIMEOUT", "60")
    calls = _listing_lookups(serve, drop_caches=True)
    assert calls["runner"] == calls["pyfuse3"] == calls["runner-asyncio"], calls
    assert calls["pyfuse3"] <= 1, calls  # (the directory itself, at most)


@pytest.mark.timeout(120)
@pytest.mark.skipif(sys.version_info < (3, 10), reason="pyfuse3 3.5 needs Python >= 3.10")
def test_listed_entries_keep_their_timeouts_as_on_pyfuse3(serve: Any) -> None:
    """A listing's entries are cached for their EntryAttributes' timeouts, as on pyfuse3
    (P3FS_TIMEOUT unset: 0 s): so ``scandir`` + ``stat`` looks every entry up again on both,
    instead of trusting what the listing said for the session's 300 s."""
    calls = _listing_lookups(serve, drop_caches=False)
    assert calls["runner"] == calls["pyfuse3"] == calls["runner-asyncio"], calls
    assert calls["pyfuse3"] >= 20, calls


@pytest.mark.timeout(120)
@pytest.mark.skipif(sys.version_info < (3, 10), reason="pyfuse3 3.5 needs Python >= 3.10")
def test_listing_replies_fill_the_buffer_as_on_pyfuse3(serve: Any) -> None:
    """A directory of 600 files, listed a page at a time: each READDIRPLUS reply holds as many
    entries as on pyfuse3 (which fills the kernel's buffer until readdir_reply says False),
    across the batches pyfuse.compat.pyfuse3 fetches from the filesystem's readdir."""
    seen = {}
    for variant in ("pyfuse3", "runner", "runner-asyncio"):
        d = os.path.join(serve(variant), "d")
        os.mkdir(d)
        for i in range(600):
            os.close(os.open(os.path.join(d, f"f{i:03d}"), os.O_CREAT | os.O_WRONLY, 0o644))
        seen[variant] = entries_per_read(d)
    assert sum(seen["pyfuse3"]) == 600 and len(seen["pyfuse3"]) > 2, seen
    assert seen["runner"] == seen["pyfuse3"] == seen["runner-asyncio"], seen


@pytest.mark.timeout(120)
@pytest.mark.skipif(sys.version_info < (3, 10), reason="pyfuse3 3.5 needs Python >= 3.10")
@pytest.mark.parametrize("variant", ["pyfuse3", "runner", "runner-asyncio"])
def test_ctx_is_the_callers_after_the_reply(serve: Any, variant: str) -> None:
    """The ``ctx`` a handler keeps names the calling process when read after the reply (the
    compat layer fetches it lazily, or before the reply frees the request)."""
    import subprocess

    mnt = serve(variant)
    r = subprocess.run([sys.executable, "-c", "import os,sys; open(sys.argv[1], 'w').close();"
                        " print(os.getpid())", os.path.join(mnt, "made")],
                       capture_output=True, text=True, timeout=30, check=True)
    assert os.getxattr(mnt, "user.p3fs.creator").decode().split() == \
        [r.stdout.strip(), str(os.getuid()), str(os.getgid())]


@pytest.mark.timeout(120)
@pytest.mark.skipif(sys.version_info < (3, 10), reason="pyfuse3 3.5 needs Python >= 3.10")
@pytest.mark.parametrize("max_tasks", [1, 99])
def test_max_tasks_as_on_pyfuse3(serve: Any, monkeypatch: Any, max_tasks: int) -> None:
    """main(max_tasks=1) serves one request at a time: three reads from three threads never
    overlap in the filesystem, on pyfuse3 and through the runner (trio and asyncio); with
    pyfuse3's default (99) they do."""
    import concurrent.futures

    monkeypatch.setenv("P3FS_SLOW", "1")
    monkeypatch.setenv("P3FS_MAX_TASKS", str(max_tasks))
    most = {}
    for variant in ("pyfuse3", "runner", "runner-asyncio"):
        mnt = serve(variant)
        paths = [os.path.join(mnt, f"f{i}") for i in range(3)]
        for p in paths:
            with open(p, "wb") as f:
                f.write(p.encode())

        def read(p: str) -> bytes:
            with open(p, "rb") as f:
                return f.read()
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            assert list(pool.map(read, paths)) == [p.encode() for p in paths]
        most[variant] = int(os.getxattr(mnt, "user.p3fs.most"))
    if max_tasks == 1:
        assert most == {"pyfuse3": 1, "runner": 1, "runner-asyncio": 1}, most
    else:
        assert min(most.values()) >= 2, most


def test_runner_maps_pyfuse3(tmp_path: Any) -> None:
    import subprocess

    script = tmp_path / "p.py"
    script.write_text("import pyfuse3, pyfuse3.asyncio, pyfuse3_asyncio\n"
                      "print(pyfuse3.__name__, pyfuse3.asyncio.__name__, "
                      "pyfuse3_asyncio.__name__)\n")
    r = subprocess.run([sys.executable, "-m", "pyfuse.compat", str(script)],
                       capture_output=True, text=True, timeout=30)
    assert r.stdout.split() == ["pyfuse.compat.pyfuse3", "pyfuse.compat.pyfuse3.asyncio",
                                "pyfuse.compat.pyfuse3.asyncio"], r.stderr


def test_readdir_reply_packs_the_attributes_as_they_are_when_called() -> None:
    """readdir_reply copies the EntryAttributes at once (as pyfuse3's C struct copy): a program
    that changes one object between calls lists each entry with the values it had; a batch of
    one such entry, and packed attributes of the wrong size, as the readdir engine takes them."""
    from pyfuse._core.batch import UNKNOWN, pack
    from pyfuse._core.convert import ATTR_STRUCT
    from pyfuse.compat.pyfuse3 import EntryAttributes, readdir_reply
    from pyfuse.compat.pyfuse3._types import ReaddirToken
    from pyfuse.errors import BadReturn

    token, a = ReaddirToken(10), EntryAttributes()
    for i in range(3):
        a.st_ino, a.st_size = 10 + i, i
        assert readdir_reply(token, b"n%d" % i, a, i + 1)
    b = pack(UNKNOWN, token.batch())
    fields = [ATTR_STRUCT.unpack_from(b.attrs, k * b.stride) for k in range(3)]
    assert [(f[1], f[5]) for f in fields] == [(10, 0), (11, 1), (12, 2)]
    one = pack(UNKNOWN, token.batch()[:1])
    assert (one.stride, bytes(one.attrs)) == (0, token.entries[0][1])
    with pytest.raises(BadReturn, match="invalid attr"):
        pack(UNKNOWN, [(b"x", b"short", 1)])
