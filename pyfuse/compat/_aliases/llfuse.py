"""``import llfuse`` in a process started by ``python -m pyfuse.compat`` (or by a program it
runs, with this directory on PYTHONPATH): pyfuse.compat.llfuse, llfuse's API."""
import sys

import pyfuse.compat.llfuse

sys.modules[__name__] = pyfuse.compat.llfuse
