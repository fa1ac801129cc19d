"""A networked filesystem on the inode API, served inside its own asyncio event loop: a
directory tree published over HTTP, mounted read-only.

    python -m pyfuse.examples.httpfs URL MOUNTPOINT [--poll 2] [--ttl 2] [--cache-mb 64]
                                     [--single] [--debug] [-o OPT]

``URL`` is a directory index as ``python -m http.server``, nginx's autoindex or Apache serve
it: each directory's listing comes from its index page (a link with a trailing '/' is a
subdirectory), a file's size and modification time from a HEAD request (Content-Length,
Last-Modified), and reads are Range requests. A server that ignores Range (``python -m
http.server`` does: it answers 200 with the whole file) is detected at the first read: from
then on each file is downloaded whole once and kept in a cache of at most ``--cache-mb``
MiB (least recently read first out), and a file larger than that cannot be read (EIO, with
one log line saying why) rather than downloaded again for every read. Every network
handler is ``async def`` and runs on the program's own event loop
(``async with pyfuse.lowlevel.serving(...)``), next to a watcher task that fetches the
listings the kernel holds every ``--poll`` seconds and tells the kernel what changed
(``invalidate_entry`` for names that came or went, ``invalidate_inode`` for files whose size or
time changed and for directories whose listing changed), so readers see the server's changes
although attributes are cached for ``--ttl`` seconds and listings until they change (the
kernel keeps each listing it reads: ``opendir`` answers ``cache_readdir``). Inode numbers are
this process's own: one per path, kept while the kernel holds a lookup of it (forget).
"""
from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import signal
import stat
import sys
import time
from collections import OrderedDict
from typing import Any, AsyncIterator, Optional, Sequence

import pyfuse.lowlevel as ll
from pyfuse import Attr, Config, FileInfo, FuseError

from ._http import Http, HttpError, parse_http_date, parse_index

log = logging.getLogger("pyfuse.examples.httpfs")


class Node:
    """One path of the tree: a directory (``listing``: {name: is_dir}, when fetched) or a
    file (size and mtime from its last HEAD)."""

    __slots__ = ("ino", "path", "is_dir", "size", "mtime_ns", "checked", "listing", "listed")

    def __init__(self, ino: int, path: str, is_dir: bool) -> None:
        self.ino, self.path, self.is_dir = ino, path, is_dir
        self.size = 0
        self.mtime_ns = 0
        self.checked = 0.0   # monotonic time of the last HEAD (files)
        self.listing: Optional[dict[str, bool]] = None
        self.listed = 0.0    # monotonic time of the last listing (directories)

    def attr(self) -> Attr:
        t = self.mtime_ns
        if self.is_dir:
            return Attr(mode=stat.S_IFDIR | 0o555, ino=self.ino, nlink=2, atime_ns=t,
                        mtime_ns=t, ctime_ns=t)
        return Attr(mode=stat.S_IFREG | 0o444, ino=self.ino, size=self.size,
                    blocks=(self.size + 511) // 512, atime_ns=t, mtime_ns=t, ctime_ns=t)


def _join(parent: str, name: str, is_dir: bool) -> str:
    return f"{parent}{name}/" if is_dir else f"{parent}{name}"


class HttpFS(ll.Operations):
    """The filesystem (see the module docstring). ``ttl``: seconds the kernel may cache
    names and attributes, and the age after which a listing or a HEAD is fetched again."""

    def __init__(self, http: Http, ttl: float = 2.0, cache_bytes: int = 64 << 20) -> None:
        self.http, self.ttl = http, ttl
        #: whether the server answers Range requests (None: not known before the first read)
        self.ranges: Optional[bool] = None
        self.whole = WholeFiles(http, cache_bytes)
        self.nodes: dict[int, Node] = {ll.ROOT_INO: Node(ll.ROOT_INO, "", True)}
        self.by_path: dict[str, int] = {"": ll.ROOT_INO}
        self._next_ino = ll.ROOT_INO + 1
        self.session: Optional[ll.Session] = None

    # -- the server --------------------------------------------------------------------------
    def _node(self, ino: int) -> Node:
        node = self.nodes.get(ino)
        if node is None:
            raise FuseError(errno.ESTALE)
        return node

    def _child(self, path: str, is_dir: bool) -> Node:
        ino = self.by_path.get(path)
        if ino is None:
            ino, self._next_ino = self._next_ino, self._next_ino + 1
            self.by_path[path] = ino
            self.nodes[ino] = Node(ino, path, is_dir)
        return self.nodes[ino]

    async def _listing(self, d: Node, fresh: bool = False) -> dict[str, bool]:
        if d.listing is None or fresh or time.monotonic() - d.listed > self.ttl:
            r = await self.http.request("GET", d.path)
            if r.status == 404:
                raise FuseError(errno.ENOENT)
            if r.status != 200:
                raise FuseError(errno.EIO, f"GET {d.path or '/'}: HTTP {r.status}")
            d.listing, d.listed = parse_index(r.body), time.monotonic()
            d.mtime_ns = d.mtime_ns or parse_http_date(r.headers.get("last-modified"))
        return d.listing

    async def _head(self, f: Node, fresh: bool = False) -> bool:
        """Refresh a file's size and mtime; True if they changed."""
        if not fresh and f.checked and time.monotonic() - f.checked <= self.ttl:
            return False
        r = await self.http.request("HEAD", f.path)
        if r.status == 404:
            raise FuseError(errno.ENOENT)
        if r.status != 200:
            raise FuseError(errno.EIO, f"HEAD {f.path}: HTTP {r.status}")
        size = int(r.headers.get("content-length", "0"))
        mtime = parse_http_date(r.headers.get("last-modified"))
        changed = f.checked != 0 and (size, mtime) != (f.size, f.mtime_ns)
        f.size, f.mtime_ns, f.checked = size, mtime, time.monotonic()
        return changed

    def _entry(self, node: Node) -> ll.Entry:
        return ll.Entry(node.attr(), entry_timeout=self.ttl, attr_timeout=self.ttl)

    # -- the inode API ---------------------------------------------------------------------
    async def lookup(self, parent: int, name: str) -> ll.Entry:
        d = self._node(parent)
        is_dir = (await self._listing(d)).get(name)
        if is_dir is None:
            raise FuseError(errno.ENOENT)
        child = self._child(_join(d.path, name, is_dir), is_dir)
        if not is_dir:
            await self._head(child)
        return self._entry(child)

    async def getattr(self, ino: int, fh: Optional[int]) -> ll.Entry:
        node = self._node(ino)
        if not node.is_dir:
            await self._head(node)
        return self._entry(node)

    def forget(self, ino: int, nlookup: int) -> None:
        if ino != ll.ROOT_INO and ll.lookups(ino) == 0:
            node = self.nodes.pop(ino, None)
            if node is not None:
                self.by_path.pop(node.path, None)

    def opendir(self, ino: int, flags: int) -> FileInfo:
        if not self._node(ino).is_dir:
            raise FuseError(errno.ENOTDIR)
        # the kernel keeps each listing it reads, across opens, until the watcher finds the
        # directory changed and invalidates it: a listing costs the server nothing again
        return FileInfo(keep_cache=True, cache_readdir=True)

    async def readdir(self, ino: int, offset: int, fh: int, plus: bool
                      ) -> AsyncIterator[tuple[str, Optional[Attr], int]]:
        d = self._node(ino)
        listing = await self._listing(d, fresh=offset == 0)
        for i, (name, is_dir) in enumerate(sorted(listing.items())):
            if i < offset:
                continue
            node = self.nodes.get(self.by_path.get(_join(d.path, name, is_dir), 0))
            # attributes only for what is known already (a HEAD per entry would be a round
            # trip each): the kernel looks the others up
            known = node is not None and (node.is_dir or node.checked)
            yield name, node.attr() if known and node else None, i + 1

    def open(self, ino: int, flags: int) -> FileInfo:
        if flags & 3:
            raise FuseError(errno.EROFS)
        if self._node(ino).is_dir:
            raise FuseError(errno.EISDIR)
        return FileInfo(keep_cache=True)  # the watcher invalidates what changed

    async def read(self, ino: int, size: int, offset: int, fh: int) -> bytes:
        f = self._node(ino)
        if self.ranges is False:
            return (await self.whole.get(f))[offset:offset + size]
        r = await self.http.request("GET", f.path,
                                    {"Range": f"bytes={offset}-{offset + size - 1}"})
        if r.status == 206:
            self.ranges = True
            return r.body[:size]
        if r.status == 416:  # past the end
            return b""
        if r.status == 200:  # the whole file: the server ignores Range
            if self.ranges is None:
                log.warning("%s ignores Range requests (HTTP 200 to a ranged GET): files are "
                            "read whole, once, and kept in a cache of %d MiB",
                            self.http.base, self.whole.limit >> 20)
            self.ranges = False
            self.whole.put(f, r.body)
            return r.body[offset:offset + size]
        raise FuseError(errno.ENOENT if r.status == 404 else errno.EIO)

    # -- keeping the kernel's caches true --------------------------------------------------
    async def watch(self, session: ll.Session, period: float) -> None:
        """Every ``period`` seconds: fetch again the listings of the directories the kernel
        knows and HEAD the files it knows; tell the kernel what changed."""
        while True:
            await asyncio.sleep(period)
            for node in list(self.nodes.values()):
                try:
                    await self._check(session, node)
                except (HttpError, FuseError) as e:
                    log.warning("checking %s: %s", node.path or "/", e)
                except RuntimeError:  # the session ended meanwhile
                    return

    async def _check(self, session: ll.Session, node: Node) -> None:
        if node.ino not in self.nodes:
            return  # forgotten meanwhile
        if not node.is_dir:
            if node.checked:
                try:
                    changed = await self._head(node, fresh=True)
                except FuseError:  # gone: its directory's check says so
                    return
                if changed:
                    log.info("%s changed: invalidating inode %d", node.path, node.ino)
                    session.invalidate_inode(node.ino)
            return
        if node.listing is None:
            return
        old = node.listing
        try:
            new = await self._listing(node, fresh=True)
        except FuseError:
            return
        for name in sorted(set(old) ^ set(new)):
            log.info("%s%s %s: invalidating the entry", node.path or "/", name,
                     "added" if name in new else "removed")
            session.invalidate_entry(node.ino, name)
        if set(old) != set(new):
            node.mtime_ns = time.time_ns()
            session.invalidate_inode(node.ino)  # its attributes (mtime) and its kept listing


class WholeFiles:
    """Whole files of a server that ignores Range, kept up to ``limit`` bytes in all (the
    least recently read go first), each for the size and mtime it was fetched with;
    concurrent reads of a file not yet here share one download."""

    def __init__(self, http: Http, limit: int) -> None:
        self.http, self.limit = http, limit
        self.used = 0
        self.files: OrderedDict[int, tuple[int, int, bytes]] = OrderedDict()
        self.pending: dict[int, asyncio.Future[bytes]] = {}
        self.refused: set[int] = set()

    def put(self, f: Node, body: bytes) -> None:
        old = self.files.pop(f.ino, None)
        if old is not None:
            self.used -= len(old[2])
        if len(body) > self.limit:
            return
        while self.files and self.used + len(body) > self.limit:
            self.used -= len(self.files.popitem(last=False)[1][2])
        self.files[f.ino] = (f.size, f.mtime_ns, body)
        self.used += len(body)

    async def get(self, f: Node) -> bytes:
        kept = self.files.get(f.ino)
        if kept is not None and kept[:2] == (f.size, f.mtime_ns):
            self.files.move_to_end(f.ino)
            return kept[2]
        if f.size > self.limit:
            if f.ino not in self.refused:
                self.refused.add(f.ino)
                log.error("%s%s: %d bytes, larger than the whole-file cache (%d MiB, "
                          "--cache-mb) of a server that ignores Range requests: not read "
                          "(EIO)", self.http.base, f.path, f.size, self.limit >> 20)
            raise FuseError(errno.EIO)
        if f.ino in self.pending:
            return await asyncio.shield(self.pending[f.ino])
        fut = self.pending[f.ino] = asyncio.get_running_loop().create_future()
        try:
            r = await self.http.request("GET", f.path)
            if r.status != 200:
                raise FuseError(errno.ENOENT if r.status == 404 else errno.EIO)
            self.put(f, r.body)
            fut.set_result(r.body)
            return r.body
        except BaseException as e:
            fut.set_exception(e if isinstance(e, Exception) else FuseError(errno.EINTR))
            fut.exception()  # retrieved: a read that nobody shares is not an error
            raise
        finally:
            del self.pending[f.ino]


async def serve(url: str, mountpoint: str, poll: float = 2.0, ttl: float = 2.0,
                cache_mb: int = 64, **kwargs: Any) -> None:
    """Mount ``url`` at ``mountpoint`` and serve until unmounted (or cancelled)."""
    http = Http(url)
    fs = HttpFS(http, ttl, cache_mb << 20)
    kwargs.setdefault("config", Config(entry_timeout=ttl, attr_timeout=ttl))
    try:
        async with ll.serving(fs, mountpoint, ro=True, fsname=url, subtype="httpfs",
                              **kwargs) as session:
            fs.session = session
            watcher = asyncio.ensure_future(fs.watch(session, poll))
            try:
                await session.unmounted()
            finally:
                watcher.cancel()
    finally:
        await http.close()


async def _main(args: argparse.Namespace, kwargs: dict[str, Any]) -> None:
    task = asyncio.ensure_future(serve(args.url, args.mountpoint, args.poll, args.ttl,
                                       args.cache_mb, **kwargs))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, task.cancel)  # unmounts
    try:
        await task
    except asyncio.CancelledError:
        pass


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("url", help="the directory index to mount, e.g. http://host:8000/dir/")
    p.add_argument("--poll", type=float, default=2.0,
                   help="seconds between checks of the server for changes (default 2)")
    p.add_argument("--ttl", type=float, default=2.0,
                   help="seconds names and attributes are cached (default 2)")
    p.add_argument("--cache-mb", type=int, default=64,
                   help="MiB of whole files kept for a server that ignores Range requests "
                        "(default 64)")


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ._cli import parse

    args, kwargs = parse("Mount a directory tree served over HTTP (the URL of its index "
                         "page), read-only.", argv, add=_arguments)
    try:
        asyncio.run(_main(args, kwargs))
    except (OSError, RuntimeError, ValueError) as e:
        print(f"{sys.argv[0]}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
