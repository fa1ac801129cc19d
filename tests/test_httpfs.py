"""The networked example (pyfuse.examples.httpfs) against a real HTTP server on 127.0.0.1:
mounted as a daemon, read through (Range requests), then the server's tree changed behind
its back: with names and attributes cached for a minute, only the example's invalidations
can make the changes visible, and they do within a few polls."""
from __future__ import annotations

import errno
import http.server
import io
import os
import subprocess
import sys
import threading
import time
from typing import Any, Iterator

import pytest

from pyfuse.examples._http import parse_index


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """http.server's directory index and files, plus Range requests (206) and keep-alive."""

    protocol_version = "HTTP/1.1"
    ranges = 0

    def log_message(self, *args: Any) -> None:
        pass

    def send_head(self) -> Any:
        path = self.translate_path(self.path)
        rng = self.headers.get("Range")
        if rng is None or os.path.isdir(path):
            return super().send_head()
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            self.send_error(404)
            return None
        first, _, last = rng.split("=", 1)[1].partition("-")
        start, end = int(first), min(int(last or len(data) - 1), len(data) - 1)
        if start >= len(data):
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(data)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        type(self).ranges += 1
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        self.send_header("Content-Length", str(end - start + 1))
        self.end_headers()
        return io.BytesIO(data[start:end + 1])


@pytest.fixture
def server(tmp_path: Any) -> Iterator[tuple[str, str]]:
    root = tmp_path / "www"
    root.mkdir()
    handler = lambda *a: RangeHandler(*a, directory=str(root))  # noqa: E731
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/", str(root)
    finally:
        srv.shutdown()
        srv.server_close()


def wait_for(cond: Any, timeout: float = 15.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if cond():
                return True
        except OSError:
            pass
        time.sleep(0.05)
    return bool(cond())


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


@pytest.mark.timeout(90)
def test_httpfs(server: tuple[str, str], example: Any, tmp_path: Any) -> None:
    url, www = server
    blob = os.urandom(3 * 1024 * 1024 + 123)
    with open(os.path.join(www, "big.bin"), "wb") as f:
        f.write(blob)
    with open(os.path.join(www, "hello.txt"), "w") as f:
        f.write("hello\n")
    os.mkdir(os.path.join(www, "sub dir"))
    with open(os.path.join(www, "sub dir", "n\u00e4me.txt"), "w") as f:
        f.write("inside\n")
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    example("httpfs", url, "--poll", "0.3", "--ttl", "60", mountpoint=mnt)

    assert sorted(os.listdir(mnt)) == ["big.bin", "hello.txt", "sub dir"]
    assert os.listdir(os.path.join(mnt, "sub dir")) == ["n\u00e4me.txt"]
    assert read(os.path.join(mnt, "sub dir", "n\u00e4me.txt")) == b"inside\n"
    st = os.stat(os.path.join(mnt, "big.bin"))
    assert st.st_size == len(blob) and st.st_mtime == int(os.stat(os.path.join(www,
                                                                              "big.bin")).st_mtime)
    assert read(os.path.join(mnt, "big.bin")) == blob
    with open(os.path.join(mnt, "big.bin"), "rb") as f:
        f.seek(2_000_001)
        assert f.read(5000) == blob[2_000_001:2_005_001]
    assert RangeHandler.ranges > 0  # read with Range requests
    with pytest.raises(OSError):
        open(os.path.join(mnt, "hello.txt"), "w")  # read-only

    # the server changes; the kernel caches names and attributes for 60 s
    assert read(os.path.join(mnt, "hello.txt")) == b"hello\n"
    with open(os.path.join(www, "hello.txt"), "w") as f:
        f.write("hello, changed\n")
    os.utime(os.path.join(www, "hello.txt"), (time.time() + 5, time.time() + 5))
    assert wait_for(lambda: read(os.path.join(mnt, "hello.txt")) == b"hello, changed\n")
    os.remove(os.path.join(www, "big.bin"))
    assert wait_for(lambda: not os.path.exists(os.path.join(mnt, "big.bin")))
    with open(os.path.join(www, "new.txt"), "w") as f:
        f.write("new\n")
    assert wait_for(lambda: "new.txt" in os.listdir(mnt))
    assert read(os.path.join(mnt, "new.txt")) == b"new\n"


def test_parse_index() -> None:
    page = (b'<ul><li><a href="a%20b.txt">a b.txt</a></li><li><a href="d/">d/</a></li>'
            b'<li><a href="../">..</a></li><li><a href="?C=N;O=D">Name</a></li>'
            b'<li><a href="http://x/y">x</a></li><li><a href="/abs">abs</a></li></ul>')
    assert parse_index(page) == {"a b.txt": False, "d": True}


class PlainHandler(http.server.SimpleHTTPRequestHandler):
    """``python -m http.server`` itself: Range is ignored (200 and the whole file); GETs of
    files counted."""

    gets = 0

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if not self.path.endswith("/"):
            type(self).gets += 1
        super().do_GET()


@pytest.fixture
def plain_server(tmp_path: Any) -> Iterator[tuple[str, Any]]:
    """``python -m http.server`` on 127.0.0.1 over a fresh folder: (its URL, the folder)."""
    root = tmp_path / "www"
    root.mkdir()
    handler = lambda *a: PlainHandler(*a, directory=str(root))  # noqa: E731
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    PlainHandler.gets = 0
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/", root
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.mark.timeout(90)
def test_httpfs_on_a_server_that_ignores_range(plain_server: Any, tmp_path: Any,
                                               example: Any) -> None:
    """python -m http.server answers every ranged GET with the whole file: each file is
    downloaded once (not once per read), and one larger than --cache-mb is refused with one
    log line instead of being downloaded again and again."""
    url, root = plain_server
    small = os.urandom(3 * 1024 * 1024 + 7)
    (root / "small.bin").write_bytes(small)
    (root / "large.bin").write_bytes(os.urandom(2 * 1024 * 1024 + 1))
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    proc = example("httpfs", url, "--cache-mb", "4", mountpoint=mnt)
    assert read(os.path.join(mnt, "small.bin")) == small
    assert PlainHandler.gets == 1  # 25+ READs of 128 KiB, one download
    with open(os.path.join(mnt, "small.bin"), "rb") as f:
        f.seek(1_000_003)
        assert f.read(10) == small[1_000_003:1_000_013]
    assert PlainHandler.gets == 1
    # the cache holds 4 MiB: large.bin (2 MiB) evicts small.bin (3 MiB)
    assert len(read(os.path.join(mnt, "large.bin"))) == 2 * 1024 * 1024 + 1
    assert PlainHandler.gets == 2
    log = open(proc.log).read()
    assert log.count("ignores Range requests") == 1, log


@pytest.mark.timeout(60)
@pytest.mark.expect_errors
def test_httpfs_refuses_a_file_larger_than_its_cache(plain_server: Any, tmp_path: Any,
                                                     example: Any) -> None:
    url, root = plain_server
    (root / "a").write_bytes(b"x" * 10)
    (root / "big").write_bytes(os.urandom(3 * 1024 * 1024))
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    proc = example("httpfs", url, "--cache-mb", "1", mountpoint=mnt)
    assert read(os.path.join(mnt, "a")) == b"x" * 10  # learns that Range is ignored
    start = time.monotonic()
    with pytest.raises(OSError) as ei:
        read(os.path.join(mnt, "big"))
    assert ei.value.errno == errno.EIO and time.monotonic() - start < 5
    assert PlainHandler.gets == 1  # big was never downloaded
    log = open(proc.log).read()
    assert log.count("larger than the whole-file cache") == 1, log


def test_httpfs_command_line(tmp_path: Any) -> None:
    """--help names the URL, --poll, --ttl and --cache-mb; the shared options may come before
    URL MOUNTPOINT (--single URL MNT)."""
    out = subprocess.run([sys.executable, "-m", "pyfuse.examples.httpfs", "--help"],
                         capture_output=True, text=True, timeout=30).stdout
    for word in ("url", "mountpoint", "--poll", "--ttl", "--cache-mb", "--single"):
        assert word in out, out
    r = subprocess.run([sys.executable, "-m", "pyfuse.examples.httpfs", "--single",
                        "http://127.0.0.1:9/", str(tmp_path / "missing")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "mount point does not exist" in r.stderr, r.stderr
