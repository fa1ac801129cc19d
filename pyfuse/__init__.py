"""pyfuse: write Linux filesystems in Python, on libfuse 3 through a small C shim.

Subclass :class:`Operations`, then ``pyfuse.run(ops, mountpoint)`` or
``with pyfuse.mount(ops, mountpoint): ...``. See docs/ for guides.
"""
try:
    from ._pyfuse_c import lib as _lib  # noqa: F401  (the compiled shim; all below needs it)
except ModuleNotFoundError as _e:
    if _e.name != __name__ + "._pyfuse_c":
        raise
    raise ImportError(
        f"pyfuse: the compiled shim pyfuse._pyfuse_c is not in {__path__[0]}, a source tree "
        "that was not built in place: run from another directory to use the installed pyfuse, "
        "or build it here with: pip install -e ."
    ) from None
except ImportError as _e:
    raise ImportError(f"pyfuse: the compiled shim pyfuse._pyfuse_c did not load ({_e}); "
                      "libfuse 3 must be installed (Debian/Ubuntu: apt-get install fuse3)"
                      ) from None

from ._core.poll import PollHandle  # noqa: E402
from .errors import FuseError
from .mounts import abort, is_mounted, unmount
from .operations import Operations
from .session import Session, context, mount, run
from .types import Attr, Config, Context, DirEntry, FdRange, FileInfo, Lock, StatVFS

__version__ = "0.1.0"

__all__ = ["Operations", "Attr", "DirEntry", "StatVFS", "Config", "Context", "FileInfo", "FdRange",
           "Lock", "FuseError", "Session", "run", "mount", "context", "unmount", "is_mounted",
           "abort", "PollHandle"]
