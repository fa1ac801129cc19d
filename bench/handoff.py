"""What an ``async def`` handler's request costs against a ``def`` one, and pyfuse3's compat
layer against pyfuse3: microseconds per ``os.stat`` (a LOOKUP and a GETATTR, every cache off,
one thread reading requests), 300 warm-up stats then 3,000 timed, in a client process.

    python bench/handoff.py [sync|async-own|async-trio|async-asyncio|async-trio-loop|
                             async-asyncio-loop|pyfuse3|pyfuse3-compat]

- sync: ``def`` handlers (pyfuse.lowlevel, ll.mount);
- async-own: ``async def`` handlers on pyfuse's own asyncio loop (ll.mount);
- async-trio / async-asyncio: the same under ``ll.serving`` inside the caller's loop, the
  requests read by libfuse's thread; with -loop, ``ll.serving(on_loop=True)``, read on the
  caller's loop itself;
- pyfuse3 / pyfuse3-compat: a pyfuse3 filesystem on pyfuse3 itself and on
  pyfuse.compat.pyfuse3 (trio).

Not a pyperf benchmark: a floor, to see where a request's time goes (docs/compat.md).
"""
from __future__ import annotations

import errno
import importlib
import stat
import subprocess
import sys
import tempfile
from typing import Any

CLIENT = ("import os,sys,time\np=sys.argv[1]+'/f'\nfor _ in range(300): os.stat(p)\n"
          "t=time.perf_counter()\nfor _ in range(3000): os.stat(p)\n"
          "print((time.perf_counter()-t)/3000*1e6)")


def client(mnt: str) -> float:
    return float(subprocess.run([sys.executable, "-c", CLIENT, mnt], capture_output=True,
                                text=True, check=True).stdout)


def native(mode: str, mnt: str) -> float:
    import pyfuse.lowlevel as ll
    from pyfuse import Attr, Config, FuseError

    no_cache = Config(entry_timeout=0, attr_timeout=0, negative_timeout=0)
    f = Attr(mode=stat.S_IFREG | 0o644, ino=2, size=1)
    root = Attr(mode=stat.S_IFDIR | 0o755, ino=1, nlink=2)

    class Sync(ll.Operations):
        def lookup(self, parent: int, name: str) -> Attr:
            if name != "f":
                raise FuseError(errno.ENOENT)
            return f

        def getattr(self, ino: int, fh: Any) -> Attr:
            return root if ino == 1 else f

    class Async(ll.Operations):
        async def lookup(self, parent: int, name: str) -> Attr:
            if name != "f":
                raise FuseError(errno.ENOENT)
            return f

        async def getattr(self, ino: int, fh: Any) -> Attr:
            return root if ino == 1 else f

    if mode in ("sync", "async-own"):
        with ll.mount(Sync() if mode == "sync" else Async(), mnt, config=no_cache,
                      threads=False):
            return client(mnt)
    result: list[float] = []

    async def main() -> None:
        async with ll.serving(Async(), mnt, config=no_cache, threads=False,
                              on_loop=mode.endswith("-loop")) as s:
            if mode.startswith("async-trio"):
                import trio
                result.append(await trio.to_thread.run_sync(client, mnt))
            else:
                import asyncio
                result.append(await asyncio.get_running_loop().run_in_executor(None, client,
                                                                               mnt))
            s.stop()

    if mode.startswith("async-trio"):
        import trio
        trio.run(main)
    else:
        import asyncio
        asyncio.run(main())
    return result[0]


def pyfuse3_fs(module: str, mnt: str) -> float:
    import trio

    p3 = importlib.import_module(module)

    class FS(p3.Operations):  # type: ignore[misc,name-defined]
        def _a(self, ino: int) -> Any:
            a = p3.EntryAttributes()
            a.st_ino = ino
            a.st_mode = stat.S_IFDIR | 0o755 if ino == 1 else stat.S_IFREG | 0o644
            a.entry_timeout = a.attr_timeout = 0
            return a

        async def lookup(self, parent: int, name: bytes, ctx: Any) -> Any:
            if name != b"f":
                raise p3.FUSEError(errno.ENOENT)
            return self._a(2)

        async def getattr(self, ino: int, ctx: Any) -> Any:
            return self._a(ino)

    p3.init(FS(), mnt, set())
    result: list[float] = []

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(p3.main)
            result.append(await trio.to_thread.run_sync(client, mnt))
            p3.terminate()

    try:
        trio.run(main)
    finally:
        p3.close()
    return result[0]


def main(argv: list[str]) -> None:
    modes = argv or ["sync", "async-own", "async-trio", "async-asyncio", "async-trio-loop",
                     "async-asyncio-loop", "pyfuse3", "pyfuse3-compat"]
    for mode in modes:
        if len(modes) > 1:  # each in a process of its own (pyfuse3's module is global)
            subprocess.run([sys.executable, __file__, mode], check=True)
            continue
        with tempfile.TemporaryDirectory() as mnt:
            if mode.startswith("pyfuse3"):
                us = pyfuse3_fs("pyfuse.compat.pyfuse3" if mode == "pyfuse3-compat"
                                else "pyfuse3", mnt)
            else:
                us = native(mode, mnt)
        print(f"{mode:16} {us:7.1f} us per stat", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
