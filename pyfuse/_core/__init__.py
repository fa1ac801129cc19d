"""The core every API of pyfuse shares (private).

- :mod:`.convert`: every conversion between Python values and the shim's C structs (attributes,
  statfs, open flags, file-descriptor ranges, paths and names, sized replies, the Config).
- :mod:`.dispatch`: the one body every callback shares (find the session, call, map the
  exception to an errno), the ``onerror`` hooks, and the routing of libfuse's log.
- :mod:`.readdir`: the readdir engine, the Python half of csrc/readdir.c (streams kept between
  requests, batches packed for ``pyfuse_fill``).
- :mod:`.stats`: per-operation statistics (``stats=True``), installed only when asked for.

The path API (:mod:`pyfuse.operations`, :mod:`pyfuse.session`, :mod:`pyfuse._callbacks`) is
built on these; nothing here knows paths from inodes.
"""
