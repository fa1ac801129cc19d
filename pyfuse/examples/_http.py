"""The HTTP side of :mod:`pyfuse.examples.httpfs`: a small HTTP/1.1 client on asyncio streams
(keep-alive connections, Content-Length and chunked bodies, Range requests) and the parser of
a server's directory index. Standard library only, so the example runs anywhere pyfuse does;
a real deployment might use aiohttp or httpx in its place.
"""
from __future__ import annotations

import asyncio
import email.utils
import errno
import html.parser
import ssl
import urllib.parse
from typing import NamedTuple, Optional

__all__ = ["Http", "Response", "HttpError", "parse_index", "parse_http_date"]


class HttpError(OSError):
    """A request that failed on the network (refused, reset, timed out): EIO for the caller,
    with the method, the URL and the cause."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.EIO, message)


class Response(NamedTuple):
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes


class Http:
    """Requests to one server (``base``: ``http://host:port/prefix/``), over at most
    ``connections`` keep-alive connections; each request times out after ``timeout``
    seconds (an HttpError; cancelling the request closes its connection)."""

    def __init__(self, base: str, connections: int = 4, timeout: float = 10.0) -> None:
        u = urllib.parse.urlsplit(base)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"not an http(s) URL: {base!r}")
        self.base = base if base.endswith("/") else base + "/"
        self.host = u.hostname
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.prefix = urllib.parse.urlsplit(self.base).path
        self._ssl: Optional[ssl.SSLContext] = \
            ssl.create_default_context() if u.scheme == "https" else None
        self._timeout = timeout
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._slots = asyncio.Semaphore(connections)

    def url(self, path: str) -> str:
        """The request target of ``path`` (relative to the base; '/'-separated, unquoted)."""
        return self.prefix + urllib.parse.quote(path.lstrip("/"))

    async def request(self, method: str, path: str,
                      headers: Optional[dict[str, str]] = None) -> Response:
        target = self.url(path)
        async with self._slots:
            for attempt in (0, 1):  # a kept-alive connection the server closed: once more
                reused = bool(self._idle)
                conn = self._idle.pop() if reused else None
                try:
                    if conn is None:
                        conn = await asyncio.wait_for(
                            asyncio.open_connection(self.host, self.port, ssl=self._ssl),
                            self._timeout)
                    resp, keep = await asyncio.wait_for(
                        self._exchange(conn, method, target, headers or {}), self._timeout)
                except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as e:
                    if conn is not None:
                        conn[1].close()
                    if reused and attempt == 0 and not isinstance(e, asyncio.TimeoutError):
                        continue
                    raise HttpError(f"{method} {self.base}{path.lstrip('/')}: "
                                    f"{e or type(e).__name__}") from None
                except BaseException:
                    if conn is not None:
                        conn[1].close()  # cancelled mid-exchange: the stream is unusable
                    raise
                if keep:
                    self._idle.append(conn)
                else:
                    conn[1].close()
                return resp
        raise AssertionError("unreachable")

    async def _exchange(self, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter],
                        method: str, target: str, headers: dict[str, str]
                        ) -> tuple[Response, bool]:
        reader, writer = conn
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host}:{self.port}",
                 "Accept-Encoding: identity", *(f"{k}: {v}" for k, v in headers.items())]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        status_line = await reader.readline()
        if not status_line:
            raise asyncio.IncompleteReadError(b"", None)
        status = int(status_line.split()[1])
        hdrs: dict[str, str] = {}
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            hdrs[k.strip().lower()] = v.strip()
        keep = hdrs.get("connection", "").lower() != "close"
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            body = b""
        elif hdrs.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await reader.readline()).split(b";")[0], 16)
                if size == 0:
                    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                parts.append(await reader.readexactly(size))
                await reader.readexactly(2)
            body = b"".join(parts)
        elif "content-length" in hdrs:
            body = await reader.readexactly(int(hdrs["content-length"]))
        else:
            body, keep = await reader.read(), False
        return Response(status, hdrs, body), keep

    async def close(self) -> None:
        for _, writer in self._idle:
            writer.close()
        self._idle.clear()


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.hrefs.append(href)


def parse_index(page: bytes) -> dict[str, bool]:
    """The entries of a directory index page (``python -m http.server``, nginx autoindex,
    Apache): {name: is_directory}. A link is an entry when it names a child of the listed
    directory (no scheme, no query, no '/' but a trailing one, which marks a directory)."""
    p = _Links()
    p.feed(page.decode("utf-8", "replace"))
    out: dict[str, bool] = {}
    for href in p.hrefs:
        u = urllib.parse.urlsplit(href)
        if u.scheme or u.netloc or u.query or u.fragment or href.startswith(("/", ".", "?")):
            continue
        is_dir = u.path.endswith("/")
        name = urllib.parse.unquote(u.path.rstrip("/"))
        if name and "/" not in name:
            out[name] = is_dir
    return out


def parse_http_date(value: Optional[str]) -> int:
    """A Last-Modified header as nanoseconds since the epoch (0 if absent or unreadable)."""
    if not value:
        return 0
    try:
        return int(email.utils.parsedate_to_datetime(value).timestamp()) * 1_000_000_000
    except (TypeError, ValueError):
        return 0
