"""Mounting: :func:`run` (blocking) and :func:`mount` (a context manager serving on a thread).

A :class:`Session` owns one libfuse instance: it builds the argument list, mounts, runs libfuse's
loop (with the GIL released; handlers take it only while they run), and unmounts and destroys on
the way out. The session's ``ffi.new_handle`` lives exactly as long as the Session object, which
outlives the C instance, so callbacks never see a dead handle.
"""
from __future__ import annotations

import dataclasses
import errno
import logging
import os
import threading
from types import TracebackType
from typing import Any, Mapping, Optional

from . import _callbacks  # noqa: F401  (registers the extern "Python" callbacks)
from ._core.convert import config_to_c
from ._core.convert import path as _decode_path
from ._core.readdir import Listings
from ._core.stats import Stats, add_handler_time
from ._daemon import daemonize
from ._pyfuse_c import ffi, lib
from .errors import errno_for
from .mounts import _abort_connection, _clean_stale, _covered, fuse_device, unmount
from .operations import Operations, implemented
from .types import Config, Context

__all__ = ["Session", "run", "mount", "context"]

log = logging.getLogger("pyfuse")
lib.pyfuse_log_init()

#: Operation name -> its number: the rows of csrc/optable.h, read through lib.
OPS: dict[str, int] = {name[len("PYFUSE_OP_"):].lower(): getattr(lib, name) for name in dir(lib)
                       if name.startswith("PYFUSE_OP_") and name != "PYFUSE_OP_COUNT"}


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace(",", "\\,")


_CONFIG_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Config)}


def _config_value(name: str, v: Any) -> Any:
    """A mount option's value for the Config field it names (-o style strings accepted)."""
    default = _CONFIG_DEFAULTS[name]
    try:
        if isinstance(default, bool) or name.startswith("splice_"):
            if isinstance(v, str):
                if v.lower() not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
                    raise ValueError(v)
                return v.lower() in ("1", "true", "yes", "on")
            return bool(v) if v is not None else True
        if isinstance(default, float):
            return float(v)
        if isinstance(default, str):
            return str(v)
        if isinstance(v, str):
            return int(v, 8 if name == "umask" else 0)
        return int(v)
    except (TypeError, ValueError):
        raise ValueError(f"mount option {name}={v!r}: not a valid value for Config.{name}") \
            from None


def _split_options(options: Optional[Mapping[str, Any]], config: Config
                   ) -> tuple[dict[str, Any], Config]:
    """Options that name a Config field set it (on a copy); the rest are mount options."""
    opts = dict(options or {})
    overrides = {k: _config_value(k, opts.pop(k)) for k in list(opts) if k in _CONFIG_DEFAULTS}
    return opts, dataclasses.replace(config, **overrides) if overrides else config


class Session:
    """One mounted filesystem. Use :func:`run` or :func:`mount` rather than this directly.

    Public: ``ops`` (the filesystem), ``mountpoint`` (absolute), ``config``, ``connection``
    (set once mounted), :meth:`mount`, :meth:`loop`, :meth:`stop`, and with ``stats=True``
    :meth:`stats` and :meth:`stats_table`. Everything else is the callbacks' (private)."""

    def __init__(self, ops: Operations, mountpoint: str, *, threads: bool = True,
                 debug: bool = False, ro: bool = False, allow_other: bool = False,
                 default_permissions: bool = False, fsname: Optional[str] = None,
                 subtype: Optional[str] = None, options: Optional[Mapping[str, Any]] = None,
                 config: Optional[Config] = None, max_threads: int = 0, clone_fd: bool = False,
                 signals: Optional[bool] = None, stack: bool = False,
                 stats: bool = False) -> None:
        if not isinstance(ops, Operations):
            raise TypeError("ops must be an instance of a pyfuse.Operations subclass")
        self.ops = ops
        self.mountpoint = os.path.abspath(mountpoint)
        options, self.config = _split_options(options, config or Config())
        #: "0:NN", the kernel's id of this mount's connection (/sys/fs/fuse/connections/NN),
        #: once mounted.
        self.connection: Optional[str] = None
        self._threads = threads
        self._max_threads = max_threads
        self._clone_fd = clone_fd
        self._signals = signals
        self._stack = stack
        self._fatal: Optional[BaseException] = None
        self._listings = Listings(self._fail, _decode_path)
        self._handle = ffi.new_handle(self)
        self._c: Any = ffi.NULL
        self._stopping = False
        # The bound method of each operation the subclass overrides (None for the others), as
        # _op_<name> for the callbacks, and the mask of their numbers for the C table.
        names = implemented(ops)
        self._opmask = 0
        for name, bit in OPS.items():
            meth = getattr(ops, name) if name in names else None
            setattr(self, "_op_" + name, meth)
            if meth is not None:
                self._opmask |= 1 << bit
        self._stats: Optional[Stats] = Stats(self, OPS) if stats else None
        if self._stats is not None:
            self._listings.timer = add_handler_time
        opts = []
        if ro:
            opts.append("ro")
        if allow_other:
            opts.append("allow_other")
        if default_permissions or self.config.posix_acl:
            opts.append("default_permissions")
        opts.append("fsname=" + _escape(fsname or "pyfuse"))
        if subtype:
            opts.append("subtype=" + _escape(subtype))
        if self.config.max_read:
            opts.append(f"max_read={int(self.config.max_read)}")  # libfuse wants both
        for k, v in options.items():
            if v is True or v is None:
                opts.append(k)
            elif v is not False:
                opts.append(f"{k}={_escape(str(v))}")
        self._argv = ["pyfuse", *(["-d"] if debug else []), "-o", ",".join(opts)]

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per-operation statistics, for a session made with ``stats=True``: ``{"getattr":
        {"count": N, "errors": N, "total_us": {...}, "handler_us": {...}, "pyfuse_us":
        {...}}, ...}``. ``count`` and ``errors`` (requests answered with an errno) count every
        request; each ``*_us`` holds p50, p90, p99, max and mean in microseconds over the last
        10,000 timed requests of that operation (one request in 8 is timed): ``total`` the
        whole callback, ``handler`` the filesystem's method (for readdir also pulling its
        entries), ``pyfuse`` the rest (decoding, conversions, copies). Time in the kernel and
        libfuse is not included."""
        if self._stats is None:
            raise RuntimeError("this session was made without stats=True")
        return self._stats.snapshot()

    def stats_table(self) -> str:
        """:meth:`stats` as a table, a line an operation (what ``--stats`` prints)."""
        if self._stats is None:
            raise RuntimeError("this session was made without stats=True")
        return self._stats.format()

    # -- used by the callbacks -------------------------------------------------------------
    def _fail(self, exc: BaseException, op: str, where: Any = None) -> int:
        """The negative errno a callback returns for an exception a handler raised (the policy
        of :mod:`pyfuse.errors`); a KeyboardInterrupt or SystemExit stops the filesystem.
        ``where`` (the C path the request names) goes into what is logged."""
        if isinstance(exc, OSError) and isinstance(exc.errno, int) and exc.errno > 0:
            return -exc.errno  # the common case (ENOENT...): nothing logged, nothing decoded
        if where is not None:
            op = f"{op} {_decode_path(where)!r}" if where != ffi.NULL else f"{op} (unlinked)"
        if isinstance(exc, Exception):
            return -errno_for(exc, op)
        self._fatal_error(exc, op)
        return -errno.EINTR

    def _fatal_error(self, exc: BaseException, op: str) -> None:
        log.info("%s raised %s: stopping the filesystem", op, type(exc).__name__)
        if self._fatal is None:
            self._fatal = exc
        # Unmounting from inside a request could wait on this very request: do it elsewhere.
        threading.Thread(target=self.stop, name="pyfuse-stop", daemon=True).start()

    # -- life cycle ------------------------------------------------------------------------
    def mount(self) -> None:
        """Create the libfuse instance and mount it (the kernel mount exists on return)."""
        _clean_stale(self.mountpoint)
        if not os.path.isdir(self.mountpoint):
            raise NotADirectoryError(errno.ENOTDIR, "mount point is not a directory",
                                     self.mountpoint)
        live = fuse_device(self.mountpoint)
        if live is not None and not self._stack:
            raise OSError(errno.EBUSY, f"mounting at {self.mountpoint}: a live FUSE filesystem "
                          f"(connection {live}) is mounted there already; unmount it first, or "
                          "pass stack=True to mount on top of it")
        argv = [ffi.new("char[]", a.encode()) for a in self._argv]
        argv_c = ffi.new("char *[]", argv + [ffi.NULL])
        self._c = lib.pyfuse_new(self._handle, len(argv), argv_c, self._opmask,
                                 config_to_c(self.config),
                                 ffi.NULL if self._stats is None else self._stats.c)
        if self._c == ffi.NULL:
            raise RuntimeError("fuse_new failed (see the 'pyfuse' log for libfuse's message)")
        rc = lib.pyfuse_mount(self._c, os.fsencode(self.mountpoint))
        if rc != 0:
            lib.pyfuse_destroy(self._c)
            self._c = ffi.NULL
            raise OSError(-rc, f"mounting at {self.mountpoint} failed (see the 'pyfuse' log)")
        self.connection = fuse_device(self.mountpoint)
        log.debug("mounted %s (connection %s)", self.mountpoint, self.connection)

    def loop(self) -> None:
        """Serve requests until unmounted or stopped; then unmount and free the instance.
        Re-raises a KeyboardInterrupt/SystemExit that a handler raised."""
        signals = self._signals
        if signals is None:
            signals = threading.current_thread() is threading.main_thread()
        try:
            rc = lib.pyfuse_loop(self._c, self._threads, self._max_threads, self._clone_fd,
                                 signals)
        finally:
            self._teardown()
        if self._fatal is not None:
            raise self._fatal
        if rc == -errno.ECONNABORTED:
            # The kernel ended the connection while a request was being read from /dev/fuse
            # (a lazy unmount's last close racing a worker's read): the end, like ENODEV.
            log.debug("%s: connection ended during a read", self.mountpoint)
        elif rc < 0:
            raise OSError(-rc, f"the FUSE loop failed: {os.strerror(-rc)}")
        if rc > 0:
            log.info("%s: signal %d received, unmounted", self.mountpoint, rc)

    def _teardown(self) -> None:
        if self._c != ffi.NULL:
            conn = self.connection
            if conn is not None and fuse_device(self.mountpoint) not in (conn, None) \
                    and _covered(conn):
                # Another filesystem is mounted on top: unmounting by path would take that one
                # down. Abort this connection; libfuse then skips the unmount.
                _abort_connection(conn)
            lib.pyfuse_unmount(self._c)
            lib.pyfuse_destroy(self._c)
            self._c = ffi.NULL
        self._listings.close_all()

    def stop(self) -> None:
        """End the loop by unmounting this session's own mount (safe from any thread; a no-op
        once unmounted). If another FUSE filesystem was mounted on top of it (``stack=True``),
        that one is left alone: this session's connection is aborted instead (root), and the
        covered mount is cleaned up by the next mount at that place."""
        if self._stopping:
            return
        self._stopping = True
        try:
            top = fuse_device(self.mountpoint)
            if top is not None and top == self.connection:
                unmount(self.mountpoint)
            elif top is not None and self.connection is not None and _covered(self.connection):
                log.warning("%s: another FUSE filesystem (connection %s) is mounted on top of "
                            "this one (%s); leaving it, and aborting this one's connection",
                            self.mountpoint, top, self.connection)
                _abort_connection(self.connection)
        except OSError as e:
            log.error("%s: unmount failed: %s", self.mountpoint, e)


def run(ops: Operations, mountpoint: str, foreground: bool = True, **kwargs: Any) -> None:
    """Mount ``ops`` at ``mountpoint`` and serve until it is unmounted (``fusermount3 -u``,
    ``umount``) or, when called from the main thread, SIGINT/SIGTERM/SIGHUP arrives; then
    unmount and return.

    Keyword arguments: ``threads=True`` (the multi-threaded loop: requests that finish quickly
    stay on one worker thread, and when a handler has run a millisecond or two without
    finishing, another worker takes over, up to ``max_threads``, default 10; False for one
    thread),
    ``debug`` (libfuse's request trace, logged on the ``pyfuse`` logger at DEBUG), ``ro``,
    ``allow_other``, ``default_permissions``, ``fsname``, ``subtype``, ``options`` (a dict of
    further ``-o`` mount options, True for a flag; a key that names a :class:`Config` field,
    such as ``attr_timeout`` or ``direct_io``, sets that field of ``config`` instead, with
    ``-o`` style strings accepted: ``{"attr_timeout": "0"}``), ``config`` (a :class:`Config`),
    ``max_threads``, ``clone_fd`` (a ``/dev/fuse`` descriptor per worker, on libfuse's own
    multi-threaded loop), ``signals`` (default: only in the main thread), ``stack`` (mount on
    top of a live FUSE filesystem at the same place; by default that is refused with EBUSY),
    ``stats`` (count and time every request: :meth:`Session.stats`; off by default, and then
    nothing is timed).

    ``foreground=False`` runs as a daemon, as fusepy and libfuse's command-line filesystems do:
    once the mount is live the calling process exits with status 0 (an error before that, such
    as a failed mount, is raised in it as usual), and a forked child serves in a new session,
    in "/", with its standard streams on /dev/null; ``run`` returns in that child when the
    filesystem is unmounted. Call it before starting threads of your own.
    """
    s = Session(ops, mountpoint, **kwargs)
    s.mount()
    if not foreground:
        daemonize()
    s.loop()


class mount:  # noqa: N801  (used as a function: ``with pyfuse.mount(...)``)
    """``with pyfuse.mount(ops, mountpoint, **kwargs) as session:`` mounts, serves on a
    background thread and unmounts on exit. Returns once the kernel mount is live. An error in
    the serving thread (or a handler's KeyboardInterrupt/SystemExit) is re-raised on exit.
    Takes the keyword arguments of :func:`run`.

    The handlers run in this process and need its GIL: a client in the same process must not
    enter the mount while holding the GIL (``mmap`` of a file of the mount; on Python 3.9 and 3.10,
    ``os.DirEntry.stat()``), or it deadlocks; use ``os.lstat(entry.path)`` or a subprocess."""

    def __init__(self, ops: Operations, mountpoint: str, **kwargs: Any) -> None:
        kwargs.setdefault("signals", False)
        self.session = Session(ops, mountpoint, **kwargs)
        self._thread: Optional[threading.Thread] = None
        self._error: Optional[BaseException] = None
        self._ready = threading.Event()

    def _serve(self) -> None:
        try:
            self.session.mount()
        except BaseException as e:
            self._error = e
            self._ready.set()
            return
        self._ready.set()
        try:
            self.session.loop()
        except BaseException as e:
            self._error = e

    def __enter__(self) -> Session:
        self._thread = threading.Thread(target=self._serve, name="pyfuse-loop", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            raise self._error
        return self.session

    def __exit__(self, et: Optional[type], ev: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        assert self._thread is not None
        self.session.stop()
        self._thread.join(10)
        if self._thread.is_alive() and self.session.connection:
            log.warning("%s: the loop did not end after unmount; aborting the connection",
                        self.session.mountpoint)
            _abort_connection(self.session.connection)
            self._thread.join(10)
        if self._error is not None and ev is None:
            raise self._error


def context() -> Context:
    """The uid, gid, pid and umask of the process whose request is being served. Only valid
    inside a handler; raises RuntimeError elsewhere."""
    c = ffi.new("struct pyfuse_ctx *")
    if lib.pyfuse_get_context(c) != 0:
        raise RuntimeError("pyfuse.context() called outside a filesystem request")
    return Context(c.uid, c.gid, c.pid, c.umask)
