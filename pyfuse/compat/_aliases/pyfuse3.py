"""``import pyfuse3`` in a process started by ``python -m pyfuse.compat`` (or by a program it
runs, with this directory on PYTHONPATH): pyfuse.compat.pyfuse3, pyfuse3's API."""
import sys

import pyfuse.compat.pyfuse3

sys.modules[__name__] = pyfuse.compat.pyfuse3
sys.modules[__name__ + ".asyncio"] = pyfuse.compat.pyfuse3.asyncio
