"""Which fusepy-compatible module the test filesystems import: FS_MODULE names it ("fuse":
fusepy, or pyfuse.compat under `python -m pyfuse.compat`; "mfusepy"; "pyfuse.compat")."""
from __future__ import annotations

import importlib
import os

fuse = importlib.import_module(os.environ.get("FS_MODULE", "fuse"))
