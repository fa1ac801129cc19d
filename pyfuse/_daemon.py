"""Daemon mode (``pyfuse.run(..., foreground=False)``, fusepy's default): what libfuse's
``fuse_daemonize`` does, after the mount.

The caller's process waits until the daemon has detached, then exits with status 0: the mount
is live when the command returns, an error before that (a failed mount) reached the caller's
terminal, and the daemon serves on in a new session, its standard streams on /dev/null and its
working directory "/" (so it does not hold the caller's directory busy).
"""
from __future__ import annotations

import os
import sys

__all__ = ["daemonize"]


def daemonize() -> None:
    """Fork; the parent exits (status 0 once the child has detached, 1 if it died first), and
    the child returns: a new session, cwd "/", stdin/stdout/stderr on /dev/null. Call it from a
    process with one thread (after the mount, before the loop starts its workers)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()  # or the parent's buffered output is written twice, or never
        except (AttributeError, OSError, ValueError):
            pass
    r, w = os.pipe()
    pid = os.fork()
    if pid:  # the caller's process
        os.close(w)
        detached = os.read(r, 1)
        os._exit(0 if detached == b"\0" else 1)
    os.close(r)
    os.setsid()
    os.chdir("/")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if null > 2:
        os.close(null)
    os.write(w, b"\0")
    os.close(w)
