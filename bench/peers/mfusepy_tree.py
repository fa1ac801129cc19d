"""The tree on mfusepy (ctypes) loading libfuse 3 (FUSE_LIBRARY_NAME=fuse3 is set here)."""
from __future__ import annotations

import os
import sys

os.environ.setdefault("FUSE_LIBRARY_NAME", "fuse3")

from .fusepy_tree import main as _main  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    _main(argv, module="mfusepy")


if __name__ == "__main__":
    main(sys.argv[1:])
