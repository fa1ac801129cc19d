"""What both APIs' sessions share: mount options, mounting, the loop, unmounting, the errno
policy's entry point, notifications' safety rules and the ``with ... mount()`` helper.

:class:`BaseSession` owns one C ``pyfuse_session`` (csrc/session.c): a libfuse high-level
instance (the path API, :class:`pyfuse.Session`) or a low-level session (the inode API,
:class:`pyfuse.lowlevel.Session`). Subclasses say how the C session is made (``_new_c``), how a
request's subject is named in the log (``_where``) and what to close when it ends (``_ended``).
The session's number in :data:`pyfuse._core.dispatch.SESSIONS` (what the shim calls back
with) is taken before the C session is made and given back once it is freed, so callbacks
never see a dead one.
"""
from __future__ import annotations

import dataclasses
import errno
import logging
import os
import queue
import threading
from types import TracebackType
from typing import Any, Callable, Generic, Mapping, Optional, TypeVar

from .._daemon import daemonize
from .._pyfuse_c import ffi, lib
from ..errors import errno_for
from ..mounts import (
    FUSE_DEVICE,
    _abort_connection,
    _clean_stale,
    _covered,
    _runtime_missing,
    fuse_device,
    unmount,
)
from ..types import Config
from .dispatch import capture_log, keeps, outs, register, unregister
from .signals import loop_with_signals
from .stats import Stats, add_handler_time

__all__ = ["BaseSession", "Mounted", "serve"]

log = logging.getLogger("pyfuse")


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace(",", "\\,")


_CONFIG_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Config)}


def _config_value(name: str, v: Any) -> Any:
    """A mount option's value for the Config field it names (-o style strings accepted)."""
    default = _CONFIG_DEFAULTS[name]
    try:
        if isinstance(default, bool) or name in Config.CAPABILITIES:
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


class BaseSession:
    """One mounted filesystem of either API (see the module docstring). Public: ``ops``,
    ``mountpoint`` (absolute), ``config``, ``connection`` (set once mounted), :meth:`mount`,
    :meth:`loop`, :meth:`stop`, and with ``stats=True`` :meth:`stats` and
    :meth:`stats_table`."""

    #: Whether a listing may repeat a name: pyfuse.compat's faces pass such listings to the
    #: kernel, as their originals do; pyfuse's own APIs refuse them (EIO, logged).
    _dup_names = False
    #: Whether the filesystem's file handles may use all 64 bits: pyfuse.compat's faces, whose
    #: originals allow them (and which have no fd_backed files); pyfuse's own APIs refuse
    #: handles of 2**63 or more, since bit 63 marks an fd_backed file (convert.file_handle).
    #: Read when the session is mounted.
    _plain_fh = False

    def __init__(self, ops: Any, mountpoint: str, *, threads: bool = True,
                 debug: bool = False, ro: bool = False, allow_other: bool = False,
                 default_permissions: bool = False, fsname: Optional[str] = None,
                 subtype: Optional[str] = None, options: Optional[Mapping[str, Any]] = None,
                 config: Optional[Config] = None, max_threads: int = 0, clone_fd: bool = False,
                 sticky: bool = False, signals: Optional[bool] = None, stack: bool = False,
                 stats: bool = False) -> None:
        if sticky and clone_fd:
            raise ValueError("sticky=True is pyfuse's own loop and clone_fd=True libfuse's: "
                             "choose one")
        self.ops = ops
        self.mountpoint = os.path.abspath(mountpoint)
        options, self.config = _split_options(options, config or Config())
        #: "0:NN", the kernel's id of this mount's connection (/sys/fs/fuse/connections/NN),
        #: once mounted.
        self.connection: Optional[str] = None
        self._threads = threads
        self._max_threads = max_threads
        self._clone_fd = clone_fd
        self._sticky = sticky
        self._signals = signals
        self._stack = stack
        self._fatal: Optional[BaseException] = None
        self._handle = -1  # the number in SESSIONS while the C session exists
        self._handles: list[int] = []  # those numbers (the session's, its statistics' view)
        #: each serving thread's out struct, by its slot (the cheap crossing: dispatch.outs)
        self._outs = outs()
        #: the Attr each serving thread last answered by address (dispatch.keeps)
        self._keep = keeps()
        self._c: Any = ffi.NULL
        self._stopping = False
        # notifications: the C session is used under this lock, and freed under it
        self._c_lock = threading.Lock()
        self._notifier: Optional[_Notifier] = None
        self._want_stats = stats
        self._stats: Optional[Stats] = None
        self._abandoned = False
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

    # -- statistics ------------------------------------------------------------------------
    def stats(self) -> dict[str, dict[str, Any]]:
        """Per-operation statistics, for a session made with ``stats=True``: ``{"getattr":
        {"count": N, "errors": N, "expected": N, "async": False, "total_us": {...},
        "handler_us": {...}, "pyfuse_us": {...}, "sum_ms": X, "share": F}, ...}``. ``count``
        and ``errors`` (requests answered with an errno) count every request; ``expected`` is
        how many of the errors were ENOENT or ENODATA (a name or an extended attribute that is
        not there: lookup's and getxattr's everyday answers), the rest are failures. Each
        ``*_us`` holds p50, p90, p99, max and mean in microseconds over the last 8,192 timed
        requests of that operation (one request in 8 is timed): ``total`` the whole callback,
        ``handler`` the filesystem's method (for readdir also pulling its entries), ``pyfuse``
        the rest (decoding, conversions, copies). ``sum_ms`` is count times the mean total
        and ``share`` its fraction of all rows' sum: where the time goes. Time in the kernel
        and libfuse is not included, except on the inode API, whose replies are sent from
        inside the call: there ``total`` (and so ``pyfuse``) includes the write of the reply
        to /dev/fuse. On the inode API, readdirplus is its own row (served by the ``readdir``
        method), a batch of forgets is one request, and an ``async def`` handler's row has
        ``async`` True: each of its requests is timed from its arrival to its reply, with
        ``wait_us`` the time before its coroutine first ran (the event loop busy) and
        ``handler_us`` the coroutine's run (its awaits included)."""
        if self._stats is None:
            raise RuntimeError("this session was made without stats=True")
        return self._stats.snapshot()

    def stats_table(self) -> str:
        """:meth:`stats` as a table, a line an operation (what ``--stats`` prints)."""
        if self._stats is None:
            raise RuntimeError("this session was made without stats=True")
        return self._stats.format()

    def _start_stats(self, ops: dict[str, int], listings: Any) -> None:
        """With ``stats=True``: keep statistics of the operations ``ops`` ({name: row number});
        called by a subclass once its ``_op_<name>`` handlers are set."""
        if self._want_stats:
            self._stats = Stats(self, ops)
            listings.timer = add_handler_time

    def _stats_c(self) -> Any:
        """What pyfuse_new counts into: the statistics' C side, or NULL."""
        return ffi.NULL if self._stats is None else self._stats.c

    # -- what a subclass provides ----------------------------------------------------------
    def _new_c(self, argc: int, argv: Any) -> Any:
        """The C session (``pyfuse_session *``), or NULL (libfuse has logged why)."""
        raise NotImplementedError

    def _where(self, op: str, where: Any) -> str:
        """``op`` with what the request is about, for the log."""
        return op

    def _ended(self) -> None:
        """The loop has ended and the mount is gone; the C session is still allocated."""

    def _freed(self) -> None:
        """The C session has been freed (libfuse's destroy has run)."""

    # -- used by the callbacks -------------------------------------------------------------
    def _fail(self, exc: BaseException, op: str, where: Any = None) -> int:
        """The negative errno a callback returns for an exception a handler raised (the policy
        of :mod:`pyfuse.errors`); a KeyboardInterrupt or SystemExit stops the filesystem.
        ``where`` (the C argument naming what the request is about) goes into what is logged."""
        if isinstance(exc, OSError) and isinstance(exc.errno, int) and exc.errno > 0:
            return -exc.errno  # the common case (ENOENT...): nothing logged, nothing decoded
        if where is not None:
            op = self._where(op, where)
        if isinstance(exc, Exception):
            return -errno_for(exc, op)
        self._fatal_error(exc, op)
        return -errno.EINTR

    def _fatal_error(self, exc: BaseException, op: str) -> None:
        log.info("%s raised %s: stopping the filesystem", op, type(exc).__name__)
        if self._fatal is None:
            self._fatal = exc
        if self._c != ffi.NULL and lib.pyfuse_exiting(self._c):
            return  # the loop ends after this request (a signal): its reply goes out first
        # Unmounting from inside a request could wait on this very request: do it elsewhere.
        threading.Thread(target=self.stop, name="pyfuse-stop", daemon=True).start()

    # -- life cycle ------------------------------------------------------------------------
    def mount(self) -> None:
        """Create the libfuse session and mount it (the kernel mount exists on return)."""
        missing = _runtime_missing()
        if missing is not None:
            raise OSError(errno.ENODEV if FUSE_DEVICE in missing else errno.ENOENT,
                          f"mounting at {self.mountpoint}: {missing}")
        _clean_stale(self.mountpoint)
        if not os.path.isdir(self.mountpoint):
            if not os.path.lexists(self.mountpoint):
                raise FileNotFoundError(errno.ENOENT, "mount point does not exist",
                                        self.mountpoint)
            raise NotADirectoryError(errno.ENOTDIR, "mount point is not a directory",
                                     self.mountpoint)
        live = fuse_device(self.mountpoint)
        if live is not None and not self._stack:
            raise OSError(errno.EBUSY, f"mounting at {self.mountpoint}: a live FUSE filesystem "
                          f"(connection {live}) is mounted there already; unmount it first, or "
                          "pass stack=True to mount on top of it")
        argv = [ffi.new("char[]", a.encode()) for a in self._argv]
        argv_c = ffi.new("char *[]", argv + [ffi.NULL])
        self._handle = register(self)
        self._handles = [self._handle]
        if self._stats is not None:
            self._handles.append(self._stats.bind())
        try:
            with capture_log() as said:
                c = self._new_c(len(argv), argv_c)
        except BaseException:
            self._give_back()
            raise
        if c == ffi.NULL:
            self._give_back()
            why = "; ".join(said) or "no reason given (see the 'pyfuse' log)"
            if any("unknown option" in m for m in said):
                raise ValueError(f"mounting at {self.mountpoint}: libfuse refused the options "
                                 f"{self._argv[-1]!r}: {why}")
            raise RuntimeError(f"mounting at {self.mountpoint}: creating the libfuse session "
                               f"failed: {why}")
        if self._plain_fh:
            lib.pyfuse_session_plain_fh(c)
        rc = lib.pyfuse_mount(c, os.fsencode(self.mountpoint))
        if rc != 0:
            lib.pyfuse_destroy(c)
            self._give_back()
            raise OSError(-rc, f"mounting at {self.mountpoint} failed (see the 'pyfuse' log)")
        self._c = c
        self.connection = fuse_device(self.mountpoint)
        log.debug("mounted %s (connection %s)", self.mountpoint, self.connection)

    def loop(self) -> Optional[int]:
        """Serve requests until unmounted or stopped; then unmount and free the session.
        Returns the number of the signal that ended it (SIGINT, SIGTERM, SIGHUP, when
        ``signals``), else None. Re-raises a KeyboardInterrupt/SystemExit that a handler
        raised."""
        signals = self._signals
        if signals is None:
            signals = threading.current_thread() is threading.main_thread()
        try:
            if signals:
                rc = loop_with_signals(self)
            else:
                rc = lib.pyfuse_loop(self._c, self._threads, self._max_threads, self._clone_fd,
                                     self._sticky)
        finally:
            if not self._abandoned:
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
            return int(rc)
        return None

    def _teardown(self) -> None:
        if self._c != ffi.NULL:
            conn = self.connection
            if conn is not None and fuse_device(self.mountpoint) not in (conn, None) \
                    and _covered(conn):
                # Another filesystem is mounted on top: unmounting by path would take that one
                # down. Abort this connection; libfuse then skips the unmount.
                _abort_connection(conn)
            lib.pyfuse_unmount(self._c)
            self._ended()
            if self._notifier is not None:
                self._notifier.stop()
            with self._c_lock:
                lib.pyfuse_destroy(self._c)
                self._c = ffi.NULL
            self._give_back()
            self._freed()

    def _give_back(self) -> None:
        """The C session is freed: give back the numbers the shim called back with."""
        for n in self._handles:
            unregister(n)
        self._handles = []

    def _free(self) -> None:
        """Unmount (if still mounted) and free the C session, if the loop has not done it
        (a session mounted but never served, or whose loop ended with an exception)."""
        if self._c != ffi.NULL:
            self._teardown()

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

    # -- notifications ---------------------------------------------------------------------
    def _in_handler(self) -> bool:
        """This thread runs a request's handler (where a notification could wait for the
        request it is part of)."""
        return bool(lib.pyfuse_in_request())

    def _notify(self, what: str, fn: Callable[..., int], *args: Any, later: bool = False,
                now: bool = False) -> None:
        """Send a notification ``fn(c_session, *args)``: at once from any other thread (an
        OSError if the kernel refuses it), or, from inside a handler, from pyfuse's notifier
        thread once the handler has let go (libfuse: some notifications wait for requests on
        the same inode to finish, so sending one from a handler of such a request would wait
        forever). ENOENT (nothing cached) is not an error. Raises RuntimeError once the
        session has ended. ``later``: always from the notifier thread (never waits); ``now``:
        always at once, from this thread (pyfuse3's rule: the caller avoids the deadlock)."""
        if self._c == ffi.NULL or self._stopping:
            raise RuntimeError(f"{what}: the session of {self.mountpoint} has ended "
                               "(or was never mounted)")
        if later or (not now and self._in_handler()):
            with self._c_lock:
                if self._notifier is None:
                    self._notifier = _Notifier(self)
            self._notifier.put(what, fn, args)
            return
        self._send(what, fn, args, raise_=True)

    def _send(self, what: str, fn: Callable[..., int], args: tuple[Any, ...],
              raise_: bool) -> None:
        with self._c_lock:
            if self._c == ffi.NULL:
                if raise_:
                    raise RuntimeError(f"{what}: the session of {self.mountpoint} has ended")
                return
            rc = fn(self._c, *args)
        if rc < 0 and rc != -errno.ENOENT:
            err = OSError(-rc, f"{what}{args!r:.200}: the kernel refused it "
                          f"({os.strerror(-rc)})")
            if raise_:
                raise err
            log.error("%s", err)


class _Notifier:
    """The thread that sends the notifications made inside handlers, in order."""

    def __init__(self, session: BaseSession) -> None:
        self._session = session
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="pyfuse-notify", daemon=True)
        self._thread.start()

    def put(self, what: str, fn: Callable[..., int], args: tuple[Any, ...]) -> None:
        self._queue.put((what, fn, args))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            what, fn, args = item
            try:
                self._session._send(what, fn, args, raise_=False)
            except Exception:
                log.exception("sending a notification failed")

    def stop(self) -> None:
        """Send what is queued (the kernel side is gone: they fail quietly) and end."""
        self._queue.put(None)
        self._thread.join(10)


def serve(session: BaseSession, foreground: bool) -> None:
    """:func:`pyfuse.run`'s body for either API: mount, daemonize if asked, serve."""
    session.mount()
    if not foreground:
        daemonize()
    session.loop()


S = TypeVar("S", bound=BaseSession)


class Mounted(Generic[S]):
    """``with mount(ops, mountpoint, **kwargs) as session:`` for either API: mounts, serves on
    a background thread and unmounts on exit (see :class:`pyfuse.mount`)."""

    def __init__(self, session: S) -> None:
        self.session = session
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

    def __enter__(self) -> S:
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
