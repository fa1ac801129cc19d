"""The command line the examples share: MOUNTPOINT, --debug, -o OPT[,OPT...], --help.

``-o`` options are passed to :func:`pyfuse.run` as ``options``: those named like a
:class:`pyfuse.Config` field (``-o direct_io``, ``-o attr_timeout=0``, ``-o max_write=131072``)
change the example's Config there; the others go to libfuse as mount options.
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Any, Callable, Optional, Sequence

import pyfuse


def parse(description: str, argv: Optional[Sequence[str]], source: bool = False,
          add: Optional[Callable[[argparse.ArgumentParser], None]] = None
          ) -> tuple[argparse.Namespace, dict[str, Any]]:
    """Parse the arguments; returns (namespace, keyword arguments for pyfuse.run). ``add``
    adds an example's own arguments (its positional ones come before the mount point)."""
    p = argparse.ArgumentParser(description=description)
    if source:
        p.add_argument("source", help="directory to mirror")
    if add is not None:
        add(p)
    p.add_argument("mountpoint", help="empty directory to mount on")
    p.add_argument("--debug", action="store_true", help="log every request (libfuse -d)")
    p.add_argument("--single", action="store_true", help="serve with one thread")
    p.add_argument("--stats", action="store_true",
                   help="count and time every request; print the table at exit and on SIGUSR1")
    p.add_argument("-o", dest="options", action="append", default=[], metavar="OPT[,OPT...]",
                   help="mount option, e.g. -o allow_other or -o fsname=demo")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    options: dict[str, Any] = {}
    for group in args.options:
        for opt in group.split(","):
            if opt:
                k, eq, v = opt.partition("=")
                options[k] = v if eq else True
    kwargs: dict[str, Any] = {"debug": args.debug, "threads": not args.single,
                              "stats": args.stats}
    for flag in ("ro", "allow_other", "default_permissions"):
        if options.pop(flag, False):
            kwargs[flag] = True
    for name in ("fsname", "subtype"):
        if name in options:
            kwargs[name] = str(options.pop(name))
    kwargs["options"] = options
    return args, kwargs


def _print_stats_on_sigusr1(session: pyfuse.Session) -> None:
    """A thread that prints the table on SIGUSR1. The main thread serves in C and never
    returns to Python, where a signal handler would run, so SIGUSR1 is blocked everywhere
    (the loop's threads inherit the mask) and this thread takes it with sigwait."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})

    def wait() -> None:
        while True:
            signal.sigwait({signal.SIGUSR1})
            print(session.stats_table(), file=sys.stderr, flush=True)

    threading.Thread(target=wait, name="pyfuse-stats", daemon=True).start()


def serve(ops: Any, mountpoint: str, session_type: Any = None, **kwargs: Any) -> int:
    """pyfuse.run, with a one-line message instead of a traceback for a bad mount point or a
    bad option; with ``stats``, the statistics table on stderr at exit and on SIGUSR1.
    ``session_type``: the Session class (default pyfuse.Session; pyfuse.lowlevel.Session for
    the inode API's examples)."""
    try:
        session = (session_type or pyfuse.Session)(ops, mountpoint, **kwargs)
        if kwargs.get("stats"):
            _print_stats_on_sigusr1(session)
        session.mount()
        try:
            session.loop()
        finally:
            if kwargs.get("stats"):
                print(session.stats_table(), file=sys.stderr, flush=True)
    except (OSError, RuntimeError, ValueError) as e:
        print(f"{sys.argv[0]}: {e}", file=sys.stderr)
        return 1
    return 0
