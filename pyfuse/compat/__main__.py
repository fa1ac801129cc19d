"""``python -m pyfuse.compat SCRIPT [ARGS...]`` (or ``-m MODULE [ARGS...]``): run a fusepy,
mfusepy or pyfuse3 program unchanged on pyfuse. ``import fuse``, ``import mfusepy`` and
``import pyfuse3`` (with ``pyfuse3.asyncio`` and the old ``pyfuse3_asyncio``) in the program
(and in what it imports) resolve to :mod:`pyfuse.compat`, :mod:`pyfuse.compat.mfusepy`,
:mod:`pyfuse.compat.pyfuse3` and :mod:`pyfuse.compat.llfuse`; the program then runs as ``python
SCRIPT ARGS`` would run it: as ``__main__``, with ``sys.argv`` = ``[SCRIPT, *ARGS]``, its
directory first on ``sys.path``, and its exit status. The same names resolve the same way in
the Python processes the program starts (test suites start their example filesystems with
``sys.executable``): the directory of alias modules, ``pyfuse/compat/_aliases``, is put first
on ``PYTHONPATH``.
"""
from __future__ import annotations

import os
import runpy
import sys

import pyfuse.compat
import pyfuse.compat.llfuse
import pyfuse.compat.mfusepy
import pyfuse.compat.pyfuse3

USAGE = ("usage: python -m pyfuse.compat SCRIPT [ARGS...]\n"
         "       python -m pyfuse.compat -m MODULE [ARGS...]")


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        raise SystemExit(2 if not argv else 0)
    sys.modules["fuse"] = pyfuse.compat
    sys.modules["mfusepy"] = pyfuse.compat.mfusepy
    sys.modules["pyfuse3"] = pyfuse.compat.pyfuse3
    sys.modules["llfuse"] = pyfuse.compat.llfuse
    sys.modules["pyfuse3.asyncio"] = pyfuse.compat.pyfuse3.asyncio
    sys.modules["pyfuse3_asyncio"] = pyfuse.compat.pyfuse3.asyncio
    aliases = os.path.join(os.path.dirname(os.path.abspath(pyfuse.compat.__file__)), "_aliases")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [aliases, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
    if argv[0] == "-m":
        if len(argv) < 2:
            print(USAGE, file=sys.stderr)
            raise SystemExit(2)
        sys.argv = [argv[1], *argv[2:]]  # sys.path[0] is already the cwd, as for python -m
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return
    script = argv[0]
    if not os.path.exists(script):
        print(f"python -m pyfuse.compat: can't open file {script!r}: no such file",
              file=sys.stderr)
        raise SystemExit(2)
    sys.argv = [script, *argv[1:]]
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as python SCRIPT: not the cwd
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
