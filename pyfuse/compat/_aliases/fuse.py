"""``import fuse`` in a process started by ``python -m pyfuse.compat`` (or by a program it
runs, with this directory on PYTHONPATH): pyfuse.compat, fusepy's API."""
import sys

import pyfuse.compat

sys.modules[__name__] = pyfuse.compat
