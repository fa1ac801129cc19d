"""Modules named as the APIs pyfuse.compat serves (``fuse``, ``mfusepy``), each replacing
itself with pyfuse's module when imported. ``python -m pyfuse.compat`` puts this directory
first on PYTHONPATH, so the Python processes a program starts import pyfuse's modules too.
Not meant to be imported as ``pyfuse.compat._aliases``."""
