"""The networked example (pyfuse.examples.httpfs) against a real HTTP server on 127.0.0.1:
mounted as a daemon, read through (Range requests), then the server's tree changed behind
its back: with names and attributes cached for a minute, only the example's invalidations
can make the changes visible, and they do within a few polls."""
from __future__ import annotations

import http.server
import io
import os
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
