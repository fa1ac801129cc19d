"""pyfuse: write Linux filesystems in Python, on libfuse 3 through a small C shim.

Subclass :class:`Operations`, then ``pyfuse.run(ops, mountpoint)`` or
``with pyfuse.mount(ops, mountpoint): ...``. See docs/ for guides.
"""
from .errors import FuseError
from .mounts import abort, is_mounted, unmount
from .operations import Operations
from .session import Session, context, mount, run
from .types import Attr, Config, Context, DirEntry, FdRange, FileInfo, Lock, StatVFS

__version__ = "0.1.0"

__all__ = ["Operations", "Attr", "DirEntry", "StatVFS", "Config", "Context", "FileInfo", "FdRange",
           "Lock", "FuseError", "Session", "run", "mount", "context", "unmount", "is_mounted",
           "abort"]
