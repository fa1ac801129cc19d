"""Example filesystems, each runnable as ``python -m pyfuse.examples.NAME``."""
