"""``import pyfuse3_asyncio`` (the old separate package): pyfuse.compat.pyfuse3.asyncio."""
import sys

import pyfuse.compat.pyfuse3.asyncio

sys.modules[__name__] = pyfuse.compat.pyfuse3.asyncio
