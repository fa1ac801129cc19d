"""``import mfusepy`` in a process started by ``python -m pyfuse.compat`` (or by a program it
runs, with this directory on PYTHONPATH): pyfuse.compat.mfusepy, mfusepy's API."""
import sys

import pyfuse.compat.mfusepy

sys.modules[__name__] = pyfuse.compat.mfusepy
