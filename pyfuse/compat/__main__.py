"""``python -m pyfuse.compat SCRIPT [ARGS...]`` (or ``-m MODULE [ARGS...]``): run a fusepy,
mfusepy, pyfuse3 or llfuse program unchanged on pyfuse. ``import fuse``, ``import mfusepy``,
``import pyfuse3`` (with ``pyfuse3.asyncio`` and the old ``pyfuse3_asyncio``) and ``import
llfuse`` in the program (and in what it imports) resolve to :mod:`pyfuse.compat`,
:mod:`pyfuse.compat.mfusepy`, :mod:`pyfuse.compat.pyfuse3` and :mod:`pyfuse.compat.llfuse`.

The program cannot tell the runner from ``python SCRIPT ARGS`` (or ``python -m MODULE``): it
runs as the ``__main__`` module in ``sys.modules``, with the builtins *module* as
``__builtins__``, ``__file__`` absolute, ``__loader__`` a ``SourceFileLoader``, ``__spec__``
and ``__package__`` None, ``sys.argv`` = ``[SCRIPT, *ARGS]``, the directory of the script
(symbolic links resolved) first on ``sys.path``, warnings attributed to its file, and its exit
status; an uncaught exception prints the program's own traceback (none of the runner's frames)
and exits with status 1 (a KeyboardInterrupt ends the process with SIGINT, as Python does).
The same names resolve the same way in the Python processes the program starts (test suites
start their example filesystems with ``sys.executable``): the directory of alias modules,
``pyfuse/compat/_aliases``, is put first on ``PYTHONPATH``.
"""
from __future__ import annotations

import builtins
import os
import runpy
import signal
import sys
import types
from importlib.machinery import SourceFileLoader

import pyfuse.compat
import pyfuse.compat.llfuse
import pyfuse.compat.mfusepy
import pyfuse.compat.pyfuse3

USAGE = ("usage: python -m pyfuse.compat SCRIPT [ARGS...]\n"
         "       python -m pyfuse.compat -m MODULE [ARGS...]")
#: Whether the interpreter's own ``__main__`` started with an ``__annotations__`` dict (3.9 to
#: 3.13 do); the runner defines no module-level annotation, so its globals tell.
_MAIN_ANNOTATIONS = "__annotations__" in globals()


def _new_main(**attrs: object) -> types.ModuleType:
    """A ``__main__`` module as the interpreter makes one, put in ``sys.modules``."""
    main = types.ModuleType("__main__")
    main.__dict__.update({"__builtins__": builtins, "__loader__": None, "__spec__": None,
                          "__package__": None, **attrs})
    if _MAIN_ANNOTATIONS:
        main.__dict__["__annotations__"] = {}
    sys.modules["__main__"] = main
    return main


def _uncaught(exc: BaseException, own: str) -> None:
    """What Python does with an exception the program did not catch: its traceback without
    the runner's frames (``own``: the runner's file), then status 1, or death by SIGINT."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == own:
        tb = tb.tb_next
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)
    if isinstance(exc, KeyboardInterrupt):
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    raise SystemExit(1)


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
        _new_main()
        try:  # what `python -m` itself calls
            runpy._run_module_as_main(argv[1], alter_argv=True)  # type: ignore[attr-defined]
        except SystemExit:
            raise
        except BaseException as exc:
            _uncaught(exc, __file__)
        return
    script = argv[0]
    try:
        with open(script, "rb") as f:
            source = f.read()
    except OSError as e:
        print(f"{sys.executable}: can't open file {os.path.abspath(script)!r}: "
              f"[Errno {e.errno}] {e.strerror}", file=sys.stderr)
        raise SystemExit(2) from None
    path = os.path.abspath(script)
    sys.argv = [script, *argv[1:]]
    sys.path[0] = os.path.dirname(os.path.realpath(script))  # as python SCRIPT: not the cwd
    module = _new_main(__file__=path, __cached__=None,
                       __loader__=SourceFileLoader("__main__", path))
    try:
        code = compile(source, path, "exec", dont_inherit=True)
        exec(code, module.__dict__)
    except SystemExit:
        raise
    except BaseException as exc:
        _uncaught(exc, __file__)


if __name__ == "__main__":
    main(sys.argv[1:])
